// Package awsconf builds the AWS SDK configuration every Denorm binary shares: the default
// chain in AWS, or fixed local credentials when an endpoint such as DynamoDB Local is given.
package awsconf

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// Load returns the SDK configuration. With a non-empty endpoint (DynamoDB Local, LocalStack)
// it uses that endpoint, region us-east-1 unless AWS_REGION says otherwise, and dummy
// credentials unless real ones are in the environment.
func Load(ctx context.Context, endpoint string) (aws.Config, error) {
	var opts []func(*config.LoadOptions) error
	if endpoint != "" {
		region := os.Getenv("AWS_REGION")
		if region == "" {
			region = "us-east-1"
		}
		opts = append(opts, config.WithRegion(region), config.WithBaseEndpoint(endpoint))
		if os.Getenv("AWS_ACCESS_KEY_ID") == "" {
			opts = append(opts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("local", "local", "")))
		}
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("loading AWS configuration: %w", err)
	}
	return cfg, nil
}

// DynamoDB returns the DynamoDB client for cfg. Against a local emulator the CRC32 response
// check is off: DynamoDB Local's checksums do not match the SDK's decompressed body and
// only produce warnings. (The stream processor reads nothing but DynamoDB; the Streams
// client, for the event source mapping emulator, is esm.NewClient.)
func DynamoDB(cfg aws.Config, local bool) *dynamodb.Client {
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.DisableValidateResponseChecksum = local })
}
