// Package provision creates a Denorm table from its spec where no CDK runs: DynamoDB Local,
// the tests and `denorm local`. It is idempotent.
package provision

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/table"
)

// API is the part of the DynamoDB client provisioning uses.
type API interface {
	CreateTable(context.Context, *dynamodb.CreateTableInput, ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(context.Context, *dynamodb.DescribeTableInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	UpdateTimeToLive(context.Context, *dynamodb.UpdateTimeToLiveInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
	DeleteTable(context.Context, *dynamodb.DeleteTableInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteTableOutput, error)
}

// Ensure creates the table if it does not exist, waits until it is active, enables TTL and
// returns the table's description (with its LatestStreamArn). An existing table is checked
// for a NEW_AND_OLD_IMAGES stream, which Denorm needs.
func Ensure(ctx context.Context, api API, name string, spec table.Spec) (*types.TableDescription, error) {
	if err := table.CheckName(name); err != nil {
		return nil, err
	}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	_, err := api.CreateTable(ctx, spec.CreateTableInput(name))
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return nil, fmt.Errorf("creating table %s: %w", name, err)
	}
	desc, err := waitActive(ctx, api, name)
	if err != nil {
		return nil, err
	}
	if ss := desc.StreamSpecification; ss == nil || !aws.ToBool(ss.StreamEnabled) || ss.StreamViewType != types.StreamViewTypeNewAndOldImages {
		return nil, fmt.Errorf("table %s exists without a NEW_AND_OLD_IMAGES stream: enable it (UpdateTable StreamSpecification) or use another table name", name)
	}
	if spec.TTLAttribute != "" && inUse == nil {
		_, err := api.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
			TableName:               aws.String(name),
			TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(spec.TTLAttribute), Enabled: aws.Bool(true)},
		})
		if err != nil {
			return nil, fmt.Errorf("enabling TTL on %s.%s: %w", name, spec.TTLAttribute, err)
		}
	}
	return desc, nil
}

func waitActive(ctx context.Context, api API, name string) (*types.TableDescription, error) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		out, err := api.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		if err != nil {
			return nil, fmt.Errorf("describing table %s: %w", name, err)
		}
		if out.Table.TableStatus == types.TableStatusActive {
			return out.Table, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("table %s not active after 2 minutes (status %s)", name, out.Table.TableStatus)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Delete removes the table; a missing table is not an error.
func Delete(ctx context.Context, api API, name string) error {
	_, err := api.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	var nf *types.ResourceNotFoundException
	if err != nil && !errors.As(err, &nf) {
		return fmt.Errorf("deleting table %s: %w", name, err)
	}
	return nil
}
