package rules

import (
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/keys"
	"github.com/denorm/denorm/internal/record"
)

// Binding is the variables of one matched item: the values its key templates captured and,
// as a fallback, its string and number attributes of the same name.
type Binding struct {
	vars []string // name, value pairs
	item record.Item
}

// Get returns the value of variable name; false when no key template captured it (only a
// sparse key the item lacks has it) and the item has no attribute of that name.
func (b Binding) Get(name string) (string, bool) {
	for i := 0; i+1 < len(b.vars); i += 2 {
		if b.vars[i] == name {
			return b.vars[i+1], true
		}
	}
	return stringAttr(b.item, name)
}

// Item returns the matched item.
func (b Binding) Item() record.Item { return b.item }

// Render renders t with this binding.
func (b Binding) Render(t *keys.Template) (string, error) { return t.Render(b.Get) }

// stringAttr returns a string or number attribute's text.
func stringAttr(item record.Item, name string) (string, bool) {
	return stringValue(item[name])
}

// stringValue returns a string or number value's text.
func stringValue(av types.AttributeValue) (string, bool) {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return v.Value, true
	case *types.AttributeValueMemberN:
		return v.Value, true
	}
	return "", false
}

// KeyVar returns name when src is "{name}": a latest or top set source taken from a
// variable of the source's keys (a reading's id in "READING#{readingId}") instead of an
// attribute.
func KeyVar(src string) (string, bool) {
	if len(src) > 2 && src[0] == '{' && src[len(src)-1] == '}' && !strings.ContainsAny(src[1:len(src)-1], "{}:") {
		return src[1 : len(src)-1], true
	}
	return "", false
}

// SourceValue is what source item gives a latest or top set source: the attribute, or for
// "{name}" the text the source's keys captured for that variable, as a string. false when
// the item has neither.
func (r *CompiledRule) SourceValue(item record.Item, src string) (types.AttributeValue, bool) {
	if v, ok := item[src]; ok {
		return v, true
	}
	name, ok := KeyVar(src)
	if !ok {
		return nil, false
	}
	b, ok := r.Source.Match(item, nil)
	if !ok {
		return nil, false
	}
	text, ok := b.Get(name)
	if !ok {
		return nil, false
	}
	return &types.AttributeValueMemberS{Value: text}, true
}

// SetAttributes are the source attributes latest or top rule r copies: its set sources
// but the key variables, which change only with the key (a new item).
func (r *CompiledRule) SetAttributes() []string {
	out := make([]string, 0, len(r.Agg.SetOrder))
	for _, t := range r.Agg.SetOrder {
		if _, isVar := KeyVar(r.Agg.Set[t]); !isVar {
			out = append(out, r.Agg.Set[t])
		}
	}
	return out
}
