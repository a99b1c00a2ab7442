package bench

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/denorm/denorm/internal/retry"
)

// API is the part of the DynamoDB client both handlers use (apply.API's method set).
type API interface {
	GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	TransactGetItems(context.Context, *dynamodb.TransactGetItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactGetItemsOutput, error)
}

// Usage is what a handler asked of DynamoDB, measured the same way for both systems: from
// the ConsumedCapacity each response carries (both handlers ask for TOTAL).
type Usage struct {
	Writes       int `json:"writes"`       // write requests (PutItem, UpdateItem, DeleteItem, TransactWriteItems)
	Transactions int `json:"transactions"` // TransactWriteItems among them
	ItemWrites   int `json:"itemWrites"`   // items written: 1 per single write, len(TransactItems) per transaction
	Reads        int `json:"reads"`        // GetItem, Query and TransactGetItems requests
	// WCU is billed write capacity: what DynamoDB Local reports for single-item writes, and
	// DynamoDB's price for transactions (2 WCU per item of up to 1 KB, plus the index writes
	// DynamoDB Local reports), because DynamoDB Local reports 2 WCU for a whole
	// TransactWriteItems whatever its item count (1, 2, 10 or 50 items: 2.0).
	WCU float64 `json:"wcu"`
	// ReportedWCU is the sum of what DynamoDB Local reported, transactions included.
	ReportedWCU float64 `json:"reportedWcu"`
	RCU         float64 `json:"rcu"`
	CondFailed  int     `json:"condFailed"` // writes refused by their condition (charged 1 WCU, as DynamoDB does)
	// Conflicts are writes refused by a transaction conflict on one of their items
	// (apply.IsConflict): what many writers of one hot item run into on DynamoDB.
	Conflicts int `json:"conflicts"`
	Errors    int `json:"errors"`
	// HotItem is the item that took the most write units (partition and sort key), the
	// figure one item's ~1,000 WCU/s limit applies to: HotItemWCU of them (2 for each
	// transaction it was in, the reported units of each single write, 1 for each refused
	// one), in HotItemWrites write requests (a transaction counting once for each of its
	// items).
	HotItem       string  `json:"hotItem,omitempty"`
	HotItemWrites int     `json:"hotItemWrites,omitempty"`
	HotItemWCU    float64 `json:"hotItemWcu,omitempty"`
}

// meteredAPI wraps a DynamoDB client and adds up Usage. It can also note when each item was
// last written successfully, to time the copies of a fan-out.
type meteredAPI struct {
	api API
	mu  sync.Mutex
	u   Usage
	// track, when set, receives the completion time of every successful single-item write.
	track map[[2]string]time.Time
	// cost is the WCU of the last successful single-item write of each item: the price of
	// one write to it, which the floor uses.
	cost map[[2]string]float64
	// perItem counts the write requests that touched each item since the last take, and
	// perItemWCU their write units.
	perItem    map[[2]string]int
	perItemWCU map[[2]string]float64
	pk         string
	sk         string
}

func newMeteredAPI(api API, pk, sk string) *meteredAPI {
	return &meteredAPI{api: api, pk: pk, sk: sk, cost: map[[2]string]float64{}, perItem: map[[2]string]int{}, perItemWCU: map[[2]string]float64{}}
}

// writeCost returns the WCU of one write to the item (1 if it was never written alone).
func (m *meteredAPI) writeCost(k [2]string) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.cost[k]; ok {
		return c
	}
	return 1
}

// take returns the usage so far and starts again from zero.
func (m *meteredAPI) take() Usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	u := m.u
	for k, w := range m.perItemWCU {
		if w > u.HotItemWCU || w == u.HotItemWCU && k[0]+" "+k[1] < u.HotItem {
			u.HotItem, u.HotItemWCU, u.HotItemWrites = k[0]+" "+k[1], w, m.perItem[k]
		}
	}
	m.u, m.perItem, m.perItemWCU = Usage{}, map[[2]string]int{}, map[[2]string]float64{}
	return u
}

// trackWrites starts (or, with false, stops) noting write times per item key.
func (m *meteredAPI) trackWrites(on bool) map[[2]string]time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.track
	m.track = nil
	if on {
		m.track = map[[2]string]time.Time{}
	}
	return old
}

func (m *meteredAPI) keyOf(k map[string]types.AttributeValue) [2]string {
	s := func(v types.AttributeValue) string {
		if x, ok := v.(*types.AttributeValueMemberS); ok {
			return x.Value
		}
		return ""
	}
	return [2]string{s(k[m.pk]), s(k[m.sk])}
}

func (m *meteredAPI) write(cc *types.ConsumedCapacity, err error, key map[string]types.AttributeValue) {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.u.Writes++
	m.u.ItemWrites++
	if key != nil {
		m.perItem[m.keyOf(key)]++
	}
	var cf *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		if cc != nil && cc.CapacityUnits != nil {
			m.u.WCU += *cc.CapacityUnits
			m.u.ReportedWCU += *cc.CapacityUnits
			if key != nil {
				m.cost[m.keyOf(key)] = *cc.CapacityUnits
				m.perItemWCU[m.keyOf(key)] += *cc.CapacityUnits
			}
		}
		if m.track != nil && key != nil {
			m.track[m.keyOf(key)] = now
		}
	case errors.As(err, &cf):
		m.u.CondFailed++
		m.u.WCU++
		m.u.ReportedWCU++
		if key != nil {
			m.perItemWCU[m.keyOf(key)]++
		}
	case retry.Conflict(err):
		m.u.Conflicts++
	default:
		m.u.Errors++
	}
}

func (m *meteredAPI) read(cc *types.ConsumedCapacity, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.u.Reads++
	if err != nil {
		m.u.Errors++
	}
	if cc != nil && cc.CapacityUnits != nil {
		m.u.RCU += *cc.CapacityUnits
	}
}

func (m *meteredAPI) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	out, err := m.api.GetItem(ctx, in, o...)
	var cc *types.ConsumedCapacity
	if out != nil {
		cc = out.ConsumedCapacity
	}
	m.read(cc, err)
	return out, err
}

// TransactGetItems is metered as one read of 2 RCU per item (DynamoDB's price for items of
// up to 4 KB in a transaction).
func (m *meteredAPI) TransactGetItems(ctx context.Context, in *dynamodb.TransactGetItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactGetItemsOutput, error) {
	out, err := m.api.TransactGetItems(ctx, in, o...)
	m.read(&types.ConsumedCapacity{CapacityUnits: aws.Float64(2 * float64(len(in.TransactItems)))}, err)
	return out, err
}

func (m *meteredAPI) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	out, err := m.api.Query(ctx, in, o...)
	var cc *types.ConsumedCapacity
	if out != nil {
		cc = out.ConsumedCapacity
	}
	m.read(cc, err)
	return out, err
}

func (m *meteredAPI) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	out, err := m.api.PutItem(ctx, in, o...)
	var cc *types.ConsumedCapacity
	if out != nil {
		cc = out.ConsumedCapacity
	}
	m.write(cc, err, in.Item)
	return out, err
}

func (m *meteredAPI) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	out, err := m.api.UpdateItem(ctx, in, o...)
	var cc *types.ConsumedCapacity
	if out != nil {
		cc = out.ConsumedCapacity
	}
	m.write(cc, err, in.Key)
	return out, err
}

func (m *meteredAPI) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	out, err := m.api.DeleteItem(ctx, in, o...)
	var cc *types.ConsumedCapacity
	if out != nil {
		cc = out.ConsumedCapacity
	}
	m.write(cc, err, in.Key)
	return out, err
}

func (m *meteredAPI) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	// Ask for the index breakdown (same request otherwise): the table part is priced here.
	req := *in
	req.ReturnConsumedCapacity = types.ReturnConsumedCapacityIndexes
	out, err := m.api.TransactWriteItems(ctx, &req, o...)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.u.Writes++
	m.u.Transactions++
	m.u.ItemWrites += len(in.TransactItems)
	for _, ti := range in.TransactItems {
		m.perItem[m.keyOf(txKey(ti))]++
	}
	if err != nil {
		var tc *types.TransactionCanceledException
		if retry.Conflict(err) {
			m.u.Conflicts++
		} else if errors.As(err, &tc) {
			m.u.CondFailed++
		} else {
			m.u.Errors++
		}
		return out, err
	}
	// Items of up to 1 KB (markers and counter targets are tens of bytes): 2 WCU each.
	m.u.WCU += 2 * float64(len(in.TransactItems))
	for _, ti := range in.TransactItems {
		m.perItemWCU[m.keyOf(txKey(ti))] += 2
	}
	if out != nil {
		for _, cc := range out.ConsumedCapacity {
			m.u.ReportedWCU += aws.ToFloat64(cc.CapacityUnits)
			for _, ix := range cc.GlobalSecondaryIndexes {
				m.u.WCU += aws.ToFloat64(ix.CapacityUnits)
			}
			for _, ix := range cc.LocalSecondaryIndexes {
				m.u.WCU += aws.ToFloat64(ix.CapacityUnits)
			}
		}
	}
	return out, err
}

// txKey is the key of the item one transaction item writes or checks.
func txKey(ti types.TransactWriteItem) map[string]types.AttributeValue {
	switch {
	case ti.Put != nil:
		return ti.Put.Item
	case ti.Update != nil:
		return ti.Update.Key
	case ti.Delete != nil:
		return ti.Delete.Key
	case ti.ConditionCheck != nil:
		return ti.ConditionCheck.Key
	}
	return nil
}
