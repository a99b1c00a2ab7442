package table

import (
	"errors"
	"fmt"
)

// Table name limits, as DynamoDB sets them.
const (
	MinNameLen = 3
	MaxNameLen = 255
)

// ErrBadName is returned (wrapped) by CheckName.
var ErrBadName = errors.New("invalid table name")

// CheckName reports whether DynamoDB accepts name as a table name: 3 to 255 characters of
// a-z, A-Z, 0-9, '_', '-' and '.'. Checked before any call, it replaces CreateTable's
// ValidationException with what to change.
func CheckName(name string) error {
	const rule = "a table name is 3 to 255 characters of a-z A-Z 0-9 _ - ."
	switch {
	case name == "":
		return fmt.Errorf("%w: the name is empty; %s", ErrBadName, rule)
	case len(name) < MinNameLen:
		n := fmt.Sprintf("%d characters", len(name))
		if len(name) == 1 {
			n = "1 character"
		}
		return fmt.Errorf("%w %q: too short (%s); %s", ErrBadName, name, n, rule)
	case len(name) > MaxNameLen:
		return fmt.Errorf("%w %.20q...: too long (%d characters); %s", ErrBadName, name, len(name), rule)
	}
	for i, r := range name {
		if !(r == '_' || r == '-' || r == '.' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return fmt.Errorf("%w %q: %q at offset %d is not allowed; %s", ErrBadName, name, r, i, rule)
		}
	}
	return nil
}
