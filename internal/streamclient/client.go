// Package streamclient builds the DynamoDB Streams client of the event source mapping
// emulator (internal/esm) and the tools that read a stream. The stream processor itself
// reads no stream: the event source mapping hands it records.
package streamclient

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
)

// New returns the DynamoDB Streams client for cfg. Against a local emulator, stream
// records are repaired where DynamoDB Local encodes an empty map as {} (repairEmptyMaps).
// optFns apply after that (the bench adds its latency model).
func New(cfg aws.Config, local bool, optFns ...func(*dynamodbstreams.Options)) *dynamodbstreams.Client {
	return dynamodbstreams.NewFromConfig(cfg, append([]func(*dynamodbstreams.Options){func(o *dynamodbstreams.Options) {
		if local {
			o.APIOptions = append(o.APIOptions, repairEmptyMaps)
		}
	}}, optFns...)...)
}
