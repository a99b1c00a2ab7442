package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/workload"
)

// commentGSI1SK is the gsi1sk line of the Comment entity in rules/social.yaml.
var commentGSI1SK = regexp.MustCompile(`(?m)^  Comment:\n(?:    .*\n)*?    gsi1sk: .*\n`)

// SparseComments returns the social rules (rules/social.yaml) with the Comment entity's
// gsi1 keys declared sparse: a comment without an author (gsi1pk, gsi1sk) is still a
// comment of its post, counted there, and counts into no user. It checks the result
// compiles and that a comment without the keys is a Comment.
func SparseComments(social []byte) ([]byte, error) {
	loc := commentGSI1SK.FindIndex(social)
	if loc == nil {
		return nil, fmt.Errorf("no Comment entity with a gsi1sk template in the social rules")
	}
	out := make([]byte, 0, len(social)+32)
	out = append(out, social[:loc[1]]...)
	out = append(out, "    sparse: [gsi1pk, gsi1sk]\n"...)
	out = append(out, social[loc[1]:]...)
	set, err := rules.ParseSet("social-sparse.yaml", out)
	if err != nil {
		return nil, fmt.Errorf("the social rules with sparse comment keys: %w", err)
	}
	anon := record.Item{"pk": &types.AttributeValueMemberS{Value: "POST#p"},
		"sk": &types.AttributeValueMemberS{Value: "COMMENT#2025-01-01T00:00:00Z#c"}}
	if e, _ := set.Match(anon, nil); e == nil || e.Name != "Comment" {
		return nil, fmt.Errorf("the social rules with sparse comment keys: a comment without gsi1pk is no Comment (sparse keys not supported?)")
	}
	return out, nil
}

// WriteSparseComments writes SparseComments of the rules file at social into dir and
// returns the new file's path.
func WriteSparseComments(social, dir string) (string, error) {
	b, err := os.ReadFile(social)
	if err != nil {
		return "", err
	}
	out, err := SparseComments(b)
	if err != nil {
		return "", fmt.Errorf("%s: %w", social, err)
	}
	path := filepath.Join(dir, "social-sparse.yaml")
	return path, os.WriteFile(path, out, 0o644)
}

// Labels of the sparse-key cases (Options.SparseComments).
const (
	caseAnonymized    = "comment author keys removed"
	caseAnonymous     = "comment inserted without author keys"
	caseReattributed  = "comment author keys set back"
	caseLostComment   = "user lost a comment whose author keys were removed"
	caseGainedComment = "user gained a comment whose author keys were set back"
	caseAnonPost      = "post of a comment without author keys"
)

// sparseChurn removes a comment's author keys (gsi1pk, gsi1sk), or inserts a comment
// without them; most of the time they are set back later, maybe to another author.
func (g *gen) sparseChurn() {
	var c Key
	if g.rng.IntN(3) == 0 {
		post, ok := g.m.pick(g.rng, Post)
		if !ok {
			return
		}
		at, id := g.ts(), g.id("ac")
		c = Key{post.PK, "COMMENT#" + at + "#" + id}
		g.emit(put("pk", c.PK, "sk", c.SK, "text", "anonymous "+id, "userName", "?", "createdAt", at, "ttl", ttlFuture))
		g.m.note(c, caseAnonymous)
		g.m.note(post, caseAnonPost)
	} else {
		var ok bool
		if c, ok = g.m.pick(g.rng, Comment); !ok {
			return
		}
		it, _ := g.m.Item(c)
		if str(it["gsi1pk"]) == "" {
			return
		}
		g.emit(workload.Op{Key: keyItem(c), Remove: []string{"gsi1pk", "gsi1sk"}})
		g.m.note(c, caseAnonymized)
		g.m.note(Key{c.PK, "METADATA"}, caseAnonPost)
		g.m.note(Key{str(it["gsi1pk"]), "PROFILE"}, caseLostComment)
	}
	g.app.SparseRemoved++
	if g.rng.IntN(4) != 0 {
		g.later(5+g.rng.IntN(100), func() { g.reattribute(c) })
	}
}

// reattribute gives a live comment without author keys a random user's.
func (g *gen) reattribute(c Key) {
	it, live := g.m.Item(c)
	if !live || str(it["gsi1pk"]) != "" {
		return
	}
	u, ok := g.m.pick(g.rng, User)
	if !ok {
		return
	}
	g.emit(update(c, "gsi1pk", u.PK, "gsi1sk", commentGSI1SKOf(c)))
	g.m.note(c, caseReattributed)
	g.m.note(u, caseGainedComment)
	g.app.SparseRestored++
}

// commentGSI1SKOf is the gsi1sk of the comment at c: COMMENT#{createdAt}.
func commentGSI1SKOf(c Key) string {
	parts := strings.Split(c.SK, "#")
	if len(parts) < 2 {
		return c.SK
	}
	return "COMMENT#" + parts[1]
}
