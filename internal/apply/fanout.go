package apply

import (
	"context"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/exprval"
	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/retry"
	"github.com/denorm/denorm/internal/rules"
)

// Job item attributes. A job is the durable cursor of a fan-out too large for one
// invocation: every update of it produces a stream record that continues the work.
const (
	jobRule    = "rule"
	jobVersion = "v"
	jobPKV     = "pkv"
	jobSrcPK   = "spk"
	jobSrcSK   = "ssk"
	jobSet     = "set"
	jobRemove  = "remove"
	jobDelete  = "del"
	jobCursor  = "cursor"
	jobStep    = "step"
)

// fanOut writes the copy to every target the rule's query finds. The first InlinePages
// pages are written here; if more remain, a job item takes over with the cursor. A newer
// version of the same source replaces an unfinished older job.
func (r *run) fanOut(f *plan.FanOut) error {
	if err := r.register(f); err != nil {
		return err
	}
	var cursor map[string]types.AttributeValue
	for page := 0; page < r.x.opt.InlinePages; page++ {
		next, err := r.fanOutPage(f, cursor)
		if err != nil {
			return err
		}
		if next == nil {
			return nil
		}
		cursor = next
	}
	return r.startJob(f, cursor)
}

// fanOutPage queries one page from cursor and writes every target in it that does not
// already hold this version; it returns the next cursor (nil at the end).
func (r *run) fanOutPage(f *plan.FanOut, cursor map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
	x := r.x
	rule := f.Rule
	idx := rule.QueryIndex
	kc := expression.Key(idx.PartitionKey).Equal(exprval.Str(f.PKValue))
	if rule.QuerySK != "" {
		kc = kc.And(expression.Key(rule.QuerySKAtt).BeginsWith(rule.QuerySK))
	}
	e, err := expression.NewBuilder().WithKeyCondition(kc).Build()
	if err != nil {
		return nil, fmt.Errorf("building fan-out query: %w", err)
	}
	in := &dynamodb.QueryInput{
		TableName: aws.String(x.table), KeyConditionExpression: e.KeyCondition(),
		ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
		ExclusiveStartKey: cursor, Limit: aws.Int32(x.opt.PageSize),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	}
	if idx.Name != "" {
		in.IndexName = aws.String(idx.Name)
	}
	var out *dynamodb.QueryOutput
	err = r.do("querying fan-out targets of "+f.Source.PK, func(ctx context.Context) error {
		var err error
		out, err = x.api.Query(ctx, in)
		if out != nil {
			r.consumed(false, out.ConsumedCapacity)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	r.count(func(s *Stats) { s.FanOutPages++ })
	var targets []plan.Key
	for _, it := range out.Items {
		if _, ok := rule.Target.Match(it, nil); !ok {
			continue
		}
		// A target already at this version or newer needs nothing (the index shows its
		// version when it projects it).
		if v, ok := it[rule.VersionAttr].(*types.AttributeValueMemberN); ok && record.CompareSeq(v.Value, f.Version) >= 0 {
			r.count(func(s *Stats) { s.Stale++ })
			continue
		}
		targets = append(targets, r.itemKey(it))
	}
	// A target found on an index may be re-linked to another source before its write lands
	// (a comment moved to another author): the write then requires the link it was found by.
	var link *plan.AttrValue
	if idx.Name != "" && idx.PartitionKey != x.set.Table.PartitionKey {
		link = &plan.AttrValue{Name: idx.PartitionKey, Value: &types.AttributeValueMemberS{Value: f.PKValue}}
	}
	var firstErr error
	r.each(len(targets), func(i int) {
		w := plan.Write{Rule: rule, Target: targets[i], Version: f.Version, Set: f.Set, Remove: f.Remove, Delete: f.Delete, Link: link}
		if err := r.write(&w); err != nil {
			r.mu.Lock()
			if firstErr == nil {
				firstErr = err
			}
			r.mu.Unlock()
			return
		}
		r.count(func(s *Stats) { s.FanOutTargets++ })
	})
	if firstErr != nil {
		return nil, firstErr
	}
	if len(out.LastEvaluatedKey) == 0 {
		return nil, nil
	}
	return out.LastEvaluatedKey, nil
}

// each runs fn for 0..n-1 with the executor's concurrency.
func (r *run) each(n int, fn func(i int)) {
	sem := make(chan struct{}, r.x.opt.Concurrency)
	done := make(chan struct{})
	for i := 0; i < n; i++ {
		sem <- struct{}{}
		go func(i int) {
			defer func() { <-sem; done <- struct{}{} }()
			fn(i)
		}(i)
	}
	for i := 0; i < n; i++ {
		<-done
	}
}

func (r *run) itemKey(it map[string]types.AttributeValue) plan.Key {
	var k plan.Key
	if v, ok := it[r.x.set.Table.PartitionKey].(*types.AttributeValueMemberS); ok {
		k.PK = v.Value
	}
	if v, ok := it[r.x.set.Table.SortKey].(*types.AttributeValueMemberS); ok {
		k.SK = v.Value
	}
	return k
}

// JobKey is the key of the job item for a rule's fan-out from one source.
func JobKey(rule, srcPK, srcSK string) plan.Key {
	return plan.Key{PK: rules.JobPrefix + rule + "#" + srcPK + "#" + srcSK, SK: rules.JobPrefix}
}

// startJob saves the fan-out's remaining work in a job item, replacing an older version's.
func (r *run) startJob(f *plan.FanOut, cursor map[string]types.AttributeValue) error {
	x := r.x
	spec := x.set.Table
	item := x.key(JobKey(f.Rule.Name, f.Source.PK, f.Source.SK))
	item[jobRule] = &types.AttributeValueMemberS{Value: f.Rule.Name}
	item[jobVersion] = &types.AttributeValueMemberN{Value: f.Version}
	item[jobPKV] = &types.AttributeValueMemberS{Value: f.PKValue}
	item[jobSrcPK] = &types.AttributeValueMemberS{Value: f.Source.PK}
	item[jobSrcSK] = &types.AttributeValueMemberS{Value: f.Source.SK}
	set := map[string]types.AttributeValue{}
	for _, a := range f.Set {
		set[a.Name] = a.Value
	}
	item[jobSet] = &types.AttributeValueMemberM{Value: set}
	if len(f.Remove) > 0 {
		item[jobRemove] = &types.AttributeValueMemberSS{Value: f.Remove}
	}
	item[jobDelete] = &types.AttributeValueMemberBOOL{Value: f.Delete}
	item[jobCursor] = &types.AttributeValueMemberM{Value: cursor}
	item[jobStep] = &types.AttributeValueMemberN{Value: "0"}
	if spec.TTLAttribute != "" {
		// A job that cannot finish (its rule was removed) expires instead of lingering.
		item[spec.TTLAttribute] = &types.AttributeValueMemberN{Value: strconv.FormatInt(x.opt.Now().Add(x.opt.MarkerTTL).Unix(), 10)}
	}
	cond := expression.AttributeNotExists(expression.Name(spec.PartitionKey)).
		Or(expression.Name(jobVersion).LessThan(num(f.Version)))
	e, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return err
	}
	err = r.do("starting fan-out job for "+f.Source.PK, func(ctx context.Context) error {
		out, err := x.api.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: aws.String(x.table), Item: item,
			ConditionExpression: e.Condition(), ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
			ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
		})
		r.written(GuardJob, out, err)
		return err
	})
	if _, ok := retry.CondFailed(err); ok {
		return nil // a job for this version or a newer one exists
	}
	if err == nil {
		r.count(func(s *Stats) { s.JobsStarted++ })
	}
	return err
}

// continueJob runs a job from its cursor for up to JobBudget, then saves the new cursor
// (whose stream record continues the job) or deletes the finished job. Both are
// conditional on the job being unchanged, so a replayed record or a superseded job stops.
func (r *run) continueJob(item map[string]types.AttributeValue) error {
	x := r.x
	f, step, cursor, err := r.decodeJob(item)
	if err != nil {
		return err
	}
	start := x.opt.Now()
	for pages := 0; ; pages++ {
		if cursor == nil {
			break
		}
		if pages > 0 && x.opt.Now().Sub(start) > x.opt.JobBudget {
			break
		}
		if cursor, err = r.fanOutPage(f, cursor); err != nil {
			return err
		}
	}
	key := x.key(JobKey(f.Rule.Name, f.Source.PK, f.Source.SK))
	cond := expression.Name(jobVersion).Equal(num(f.Version)).And(expression.Name(jobStep).Equal(num(step)))
	if cursor == nil {
		e, err := expression.NewBuilder().WithCondition(cond).Build()
		if err != nil {
			return err
		}
		err = r.do("finishing fan-out job", func(ctx context.Context) error {
			out, err := x.api.DeleteItem(ctx, &dynamodb.DeleteItemInput{
				TableName: aws.String(x.table), Key: key, ConditionExpression: e.Condition(),
				ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
				ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
			})
			r.written(GuardJob, out, err)
			return err
		})
		if _, ok := retry.CondFailed(err); ok {
			return nil
		}
		if err == nil {
			r.count(func(s *Stats) { s.JobsDone++ })
		}
		return err
	}
	next, _ := strconv.Atoi(step)
	ub := expression.Set(expression.Name(jobCursor), val(&types.AttributeValueMemberM{Value: cursor})).
		Set(expression.Name(jobStep), num(strconv.Itoa(next+1)))
	e, err := expression.NewBuilder().WithUpdate(ub).WithCondition(cond).Build()
	if err != nil {
		return err
	}
	err = r.updateItem("saving fan-out cursor", key, e, GuardJob)
	if _, ok := retry.CondFailed(err); ok {
		return nil
	}
	return err
}

func (r *run) decodeJob(item map[string]types.AttributeValue) (*plan.FanOut, string, map[string]types.AttributeValue, error) {
	s := func(k string) string {
		switch v := item[k].(type) {
		case *types.AttributeValueMemberS:
			return v.Value
		case *types.AttributeValueMemberN:
			return v.Value
		}
		return ""
	}
	rule := r.x.set.Rule(s(jobRule))
	if rule == nil || rule.Kind != rules.KindCopy || rule.Via == "key" {
		return nil, "", nil, fmt.Errorf("fan-out job %q names no fan-out rule of this rules file", s(jobRule))
	}
	f := &plan.FanOut{Rule: rule, Source: plan.Key{PK: s(jobSrcPK), SK: s(jobSrcSK)}, PKValue: s(jobPKV), Version: s(jobVersion)}
	if f.Version == "" || f.PKValue == "" {
		return nil, "", nil, fmt.Errorf("fan-out job for rule %q is missing its version or query value", rule.Name)
	}
	if m, ok := item[jobSet].(*types.AttributeValueMemberM); ok {
		for _, t := range rule.Copy.SetOrder {
			if v, ok := m.Value[t]; ok {
				f.Set = append(f.Set, plan.AttrValue{Name: t, Value: v})
			}
		}
	}
	if ss, ok := item[jobRemove].(*types.AttributeValueMemberSS); ok {
		f.Remove = ss.Value
	}
	if b, ok := item[jobDelete].(*types.AttributeValueMemberBOOL); ok {
		f.Delete = b.Value
	}
	var cursor map[string]types.AttributeValue
	if m, ok := item[jobCursor].(*types.AttributeValueMemberM); ok && len(m.Value) > 0 {
		cursor = m.Value
	}
	step := s(jobStep)
	if step == "" {
		step = "0"
	}
	return f, step, cursor, nil
}
