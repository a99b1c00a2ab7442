package plan

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
)

// ownKey takes a key's value from the item only where rendering the template from the
// item's binding gives the same string.
func TestOwnKey(t *testing.T) {
	set, err := rules.ParseSet("own.yaml", []byte(`version: 1
table:
  partitionKey: pk
  sortKey: sk
  globalIndexes:
    - {name: gsi1, partitionKey: gsi1pk, sortKey: gsi1sk, projection: ALL}
    - {name: gsi2, partitionKey: gsi2pk, sortKey: gsi2sk, projection: ALL}
entities:
  User:    {pk: "USER#{userId}", sk: "PROFILE"}
  Shelf:   {pk: "SHELF#{n:4}", sk: "META"}
  Comment: {pk: "POST#{postId}", sk: "C#{commentId}", gsi1pk: "USER#{userId}", gsi1sk: "C#{commentId}", sparse: [gsi1pk, gsi1sk]}
  Book:    {pk: "BOOK#{bookId}", sk: "META", gsi2pk: "SHELF#{n:4}", gsi2sk: "B#{bookId}"}
  Member:  {pk: "GROUP#{groupId}", sk: "USER#{userId}", gsi1pk: "USER#{userId}", gsi1sk: "G#{groupId}"}
  Like:    {pk: "POST#{postId}", sk: "LIKE#{userId}", gsi1pk: "USER#{userId}", gsi1sk: "L#{postId}"}
`))
	if err != nil {
		t.Fatal(err)
	}
	ent := func(name string) *rules.EntityType {
		for _, e := range set.Entities {
			if e.Name == name {
				return e
			}
		}
		t.Fatalf("no entity %s", name)
		return nil
	}
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	tests := []struct {
		name   string
		item   record.Item
		target string
		want   string // "" for no
	}{
		{"index key is the target's pk", record.Item{"pk": s("POST#p1"), "sk": s("C#c1"), "gsi1pk": s("USER#u1"), "gsi1sk": s("C#c1")},
			"User", "USER#u1"},
		{"sparse key absent", record.Item{"pk": s("POST#p1"), "sk": s("C#c1")}, "User", ""},
		{"zero-padded template", record.Item{"pk": s("BOOK#b1"), "sk": s("META"), "gsi2pk": s("SHELF#7"), "gsi2sk": s("B#b1")},
			"Shelf", ""},
		// The first key with the template is sk, whose capture the binding holds.
		{"primary key is the target's pk", record.Item{"pk": s("GROUP#g1"), "sk": s("USER#u1"), "gsi1pk": s("USER#u2"), "gsi1sk": s("G#g1")},
			"User", "USER#u1"},
		// sk captures userId before gsi1pk does: the binding renders from sk's capture.
		{"variable captured by an earlier key", record.Item{"pk": s("POST#p1"), "sk": s("LIKE#u1"), "gsi1pk": s("USER#u2"), "gsi1sk": s("L#p1")},
			"User", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			self, b := set.Match(tt.item, nil)
			if self == nil {
				t.Fatal("item matches no entity")
			}
			target := ent(tt.target)
			got, ok := ownKey(self, tt.item, target.PK)
			if !ok {
				got = ""
			}
			if got != tt.want {
				t.Errorf("ownKey = %q, %t; want %q", got, ok, tt.want)
			}
			if ok {
				if r, err := b.Render(target.PK); err != nil || r != got {
					t.Errorf("rendering gives %q, %v; ownKey %q", r, err, got)
				}
			}
		})
	}
}

// On every record of the golden tests and every entity of the social example, ownKey
// agrees with rendering.
func TestOwnKeyAgreesWithRender(t *testing.T) {
	set, err := rules.LoadSet("../../rules/social.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("testdata/*.json")
	n := 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		raws, err := record.SplitEvent(data)
		if err != nil {
			t.Fatal(err)
		}
		for _, raw := range raws {
			c, err := record.Decode(raw)
			if err != nil {
				continue
			}
			for _, item := range []record.Item{c.Old, c.New} {
				self, b := set.Match(item, nil)
				if self == nil {
					continue
				}
				for _, target := range set.Entities {
					v, ok := ownKey(self, item, target.PK)
					if !ok {
						continue
					}
					n++
					if r, err := b.Render(target.PK); err != nil || r != v {
						t.Errorf("%s: %s into %s: ownKey %q, rendering %q, %v", file, self.Name, target.Name, v, r, err)
					}
				}
			}
		}
	}
	if n == 0 {
		t.Error("ownKey found no key to reuse in the testdata")
	}
}
