package value

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// DistinctKey is the identity of a distinct rule's value as DynamoDB equality sees it: two
// values have the same key exactly when Equal holds ("1.0" and "1" are one number; the
// string "1" is another value). Only strings, numbers and booleans are values; false for
// anything else (absent, NULL, lists, maps, sets, binary), which a distinct leaves out.
func DistinctKey(v types.AttributeValue) (string, bool) {
	switch x := v.(type) {
	case *types.AttributeValueMemberS:
		return "S" + x.Value, true
	case *types.AttributeValueMemberN:
		n, err := ParseNumber(x.Value)
		if err != nil {
			return "", false
		}
		return "N" + n.String(), true
	case *types.AttributeValueMemberBOOL:
		if x.Value {
			return "Btrue", true
		}
		return "Bfalse", true
	}
	return "", false
}
