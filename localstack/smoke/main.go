// Command smoke checks a Denorm stack deployed with rules/social.yaml end to end: it writes
// a user, a post and comments through the DynamoDB API and waits until the deployed stream
// processor has copied the author's name into every comment and counted them on the post,
// then renames the user and waits for the copies to follow.
//
//	go run ./localstack/smoke -endpoint http://localhost:4566 -table <TableName output>
//
// Without -endpoint it talks to AWS with the default credential chain, so the same check
// runs against a real deployment.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/awsconf"
)

func main() {
	endpoint := flag.String("endpoint", "", "DynamoDB endpoint (LocalStack: http://localhost:4566); empty for AWS")
	tableName := flag.String("table", "", "table name (the stack's TableName output)")
	wait := flag.Duration("wait", 2*time.Minute, "how long to wait for each convergence")
	comments := flag.Int("comments", 3, "comments to write")
	flag.Parse()
	if *tableName == "" {
		fmt.Fprintln(os.Stderr, "smoke: -table is required")
		os.Exit(2)
	}
	ctx := context.Background()
	cfg, err := awsconf.Load(ctx, *endpoint)
	if err == nil {
		db := awsconf.DynamoDB(cfg, *endpoint != "")
		err = run(ctx, &smoke{db: db, table: *tableName, wait: *wait}, *comments)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "smoke: FAIL:", err)
		os.Exit(1)
	}
	fmt.Println("smoke: OK")
}

type smoke struct {
	db    *dynamodb.Client
	table string
	wait  time.Duration
}

type item = map[string]types.AttributeValue

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func run(ctx context.Context, sm *smoke, n int) error {
	// Unique ids: the smoke can run again on the same stack.
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	userID, postID := "smoke-u-"+run, "smoke-p-"+run
	user := item{"pk": s("USER#" + userID), "sk": s("PROFILE"), "name": s("Ada"), "avatar": s("ada.png")}
	post := item{"pk": s("POST#" + postID), "sk": s("METADATA"), "userId": s(userID), "title": s("Hello"), "status": s("published")}
	if err := sm.put(ctx, user, post); err != nil {
		return err
	}
	var commentKeys []item
	for i := range n {
		created := time.Now().UTC().Add(time.Duration(i) * time.Second).Format(time.RFC3339)
		c := item{
			"pk": s("POST#" + postID), "sk": s(fmt.Sprintf("COMMENT#%s#c%d", created, i)),
			"gsi1pk": s("USER#" + userID), "gsi1sk": s("COMMENT#" + created), "text": s("first!"),
		}
		if err := sm.put(ctx, c); err != nil {
			return err
		}
		commentKeys = append(commentKeys, item{"pk": c["pk"], "sk": c["sk"]})
	}
	fmt.Printf("smoke: wrote user %s, post %s and %d comments to %s\n", userID, postID, n, sm.table)

	if err := sm.eventually(ctx, "the post's commentCount", func() error {
		return sm.expectN(ctx, item{"pk": post["pk"], "sk": post["sk"]}, "commentCount", n)
	}); err != nil {
		return err
	}
	if err := sm.eventually(ctx, "the author's name in every comment", func() error {
		return sm.expectS(ctx, commentKeys, "userName", "Ada")
	}); err != nil {
		return err
	}
	user["name"] = s("Ada Lovelace")
	if err := sm.put(ctx, user); err != nil {
		return err
	}
	return sm.eventually(ctx, "the new name in every comment after a rename", func() error {
		return sm.expectS(ctx, commentKeys, "userName", "Ada Lovelace")
	})
}

func (sm *smoke) put(ctx context.Context, items ...item) error {
	for _, it := range items {
		if _, err := sm.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(sm.table), Item: it}); err != nil {
			return fmt.Errorf("writing %v: %w", it["pk"], err)
		}
	}
	return nil
}

// eventually retries check until it passes or the wait is over, and says what it saw last.
func (sm *smoke) eventually(ctx context.Context, what string, check func() error) error {
	start := time.Now()
	for {
		err := check()
		if err == nil {
			fmt.Printf("smoke: %s converged after %s\n", what, time.Since(start).Round(100*time.Millisecond))
			return nil
		}
		if time.Since(start) > sm.wait {
			return fmt.Errorf("%s did not converge within %s: %w", what, sm.wait, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

var errNotYet = errors.New("not yet")

func (sm *smoke) get(ctx context.Context, key item) (item, error) {
	out, err := sm.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(sm.table), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, fmt.Errorf("reading %v: %w", key["sk"], err)
	}
	return out.Item, nil
}

func (sm *smoke) expectN(ctx context.Context, key item, attr string, want int) error {
	it, err := sm.get(ctx, key)
	if err != nil {
		return err
	}
	n, ok := it[attr].(*types.AttributeValueMemberN)
	if !ok || n.Value != strconv.Itoa(want) {
		return fmt.Errorf("%w: %s is %v, want %d", errNotYet, attr, show(it[attr]), want)
	}
	return nil
}

func (sm *smoke) expectS(ctx context.Context, keys []item, attr, want string) error {
	for _, k := range keys {
		it, err := sm.get(ctx, k)
		if err != nil {
			return err
		}
		if v, ok := it[attr].(*types.AttributeValueMemberS); !ok || v.Value != want {
			return fmt.Errorf("%w: %s of %s is %v, want %q", errNotYet, attr, show(k["sk"]), show(it[attr]), want)
		}
	}
	return nil
}

func show(v types.AttributeValue) string {
	switch v := v.(type) {
	case nil:
		return "missing"
	case *types.AttributeValueMemberS:
		return strconv.Quote(v.Value)
	case *types.AttributeValueMemberN:
		return v.Value
	}
	return fmt.Sprintf("%T", v)
}
