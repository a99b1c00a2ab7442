package apply

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/plan"
)

// sharedRead is one consistent GetItem that every pull of a batch asking for the same item
// (and projection) shares: a group's name pulled into 30 new memberships is read once. The
// pulls of a batch run together after its pushes, so one read serves them as if each had
// read at that moment; their writes keep their own guards.
type sharedRead struct {
	done chan struct{}
	item map[string]types.AttributeValue
	err  error
}

// readOnce reads key (ConsistentRead, with the projection if not nil) once per
// Apply and returns the item, nil if there is none.
func (r *run) readOnce(what string, key plan.Key, projection *string, names map[string]string) (map[string]types.AttributeValue, error) {
	id := key.PK + "\x00" + key.SK + "\x00" + aws.ToString(projection)
	r.mu.Lock()
	if r.reads == nil {
		r.reads = map[string]*sharedRead{}
	}
	s, ok := r.reads[id]
	if !ok {
		s = &sharedRead{done: make(chan struct{})}
		r.reads[id] = s
	}
	r.mu.Unlock()
	if ok {
		select {
		case <-s.done:
			return s.item, s.err
		case <-r.ctx.Done():
			return nil, r.ctx.Err()
		}
	}
	defer close(s.done)
	x := r.x
	s.err = r.do(what, func(ctx context.Context) error {
		out, err := x.api.GetItem(ctx, &dynamodb.GetItemInput{
			TableName: aws.String(x.table), Key: x.key(key), ConsistentRead: aws.Bool(true),
			ProjectionExpression: projection, ExpressionAttributeNames: names,
			ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
		})
		if out != nil {
			r.consumed(false, out.ConsumedCapacity)
			s.item = out.Item
		}
		return err
	})
	return s.item, s.err
}
