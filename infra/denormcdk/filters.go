package denormcdk

import (
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"
)

// ErrTooManyFilters is wrapped by CheckFilterPatterns when the rules need more filters than
// the event source mapping may have.
var ErrTooManyFilters = errors.New("too many event filters")

// CheckFilterPatterns reports every reason Lambda would reject patterns as the filter
// criteria of one event source mapping: more than maxFilters patterns, a pattern longer than
// MaxFilterPatternLength characters, or one that is not a JSON object. Lambda only says so at
// deploy time, minutes later and with less context; checking at synth keeps the failure next
// to the rules file that caused it.
func CheckFilterPatterns(patterns []string, maxFilters int) error {
	var errs []error
	if len(patterns) > maxFilters {
		errs = append(errs, fmt.Errorf("%w: the rules need %d event filters but an event source mapping allows %d "+
			"(Lambda quota \"Filters per event source mapping\"); merge rules on the same entities, "+
			"or request a quota increase and raise MaxFilters", ErrTooManyFilters, len(patterns), maxFilters))
	}
	for i, p := range patterns {
		if n := utf8.RuneCountInString(p); n > MaxFilterPatternLength {
			errs = append(errs, fmt.Errorf("event filter %d is %d characters long, Lambda allows %d", i+1, n, MaxFilterPatternLength))
		}
		var obj map[string]any
		if err := json.Unmarshal([]byte(p), &obj); err != nil || obj == nil {
			errs = append(errs, fmt.Errorf("event filter %d is not a JSON object: %.80q", i+1, p))
			continue
		}
		if err := checkOperators(obj); err != nil {
			errs = append(errs, fmt.Errorf("event filter %d: %w", i+1, err))
		}
	}
	return errors.Join(errs...)
}

// lambdaOperators are the comparison operators Lambda event filtering accepts. It is a
// subset of EventBridge's: no wildcard, no $or, no anything-but with prefix or suffix.
var lambdaOperators = map[string]bool{
	"prefix": true, "suffix": true, "anything-but": true, "numeric": true,
	"exists": true, "equals-ignore-case": true,
}

// checkOperators finds operators in a pattern that EventBridge knows but Lambda rejects, so
// that the mistake shows at synth rather than as a failed deployment.
func checkOperators(v any) error {
	switch v := v.(type) {
	case map[string]any:
		for k, child := range v {
			if k == "$or" {
				return fmt.Errorf("operator \"$or\" is not supported by Lambda event filtering; use one filter per alternative")
			}
			if err := checkOperators(child); err != nil {
				return err
			}
		}
	case []any:
		for _, el := range v {
			op, ok := el.(map[string]any)
			if !ok {
				continue // a literal value to match
			}
			for name, arg := range op {
				if !lambdaOperators[name] {
					return fmt.Errorf("operator %q is not supported by Lambda event filtering", name)
				}
				if name == "anything-but" {
					if _, isObj := arg.(map[string]any); isObj {
						return fmt.Errorf("anything-but takes values only in Lambda event filtering, not %v "+
							"(a prefix cannot be excluded; list the prefixes to include instead)", arg)
					}
				}
			}
		}
	}
	return nil
}

// filterCriteria is the mapping's FilterCriteria property for one or more patterns.
func filterCriteria(patterns []string) *awslambda.CfnEventSourceMapping_FilterCriteriaProperty {
	filters := make([]any, 0, len(patterns))
	for _, p := range patterns {
		filters = append(filters, &awslambda.CfnEventSourceMapping_FilterProperty{Pattern: jsii.String(p)})
	}
	return &awslambda.CfnEventSourceMapping_FilterCriteriaProperty{Filters: filters}
}
