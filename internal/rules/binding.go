package rules

import (
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
