package rules

import (
	"fmt"
	"sort"
	"strings"

	"github.com/denorm/denorm/internal/keys"
)

// Messages about a template variable an entity lacks. Variables are matched by name, so the
// usual slip is one segment named two ways: an AssignedTask keyed "USER#{assigneeId}" copied
// from a User keyed "USER#{userId}". The fix is then a rename, not a new attribute.

// renameHint returns "did you mean {userId}? User's pk "USER#{userId}" names it userId" for
// the first variable of miss that have names otherwise: in the same place of a template with
// the same literals as one of need's, or spelled nearly the same. "" when there is none.
func renameHint(need, have *entityInfo, miss []string) string {
	for _, m := range miss {
		for _, nk := range keyOrder(need.e) {
			nt := need.tmpl[nk]
			if nt == nil {
				continue
			}
			for _, hk := range keyOrder(have.e) {
				ht := have.tmpl[hk]
				if ht == nil {
					continue
				}
				if other, ok := sameSlot(nt, ht, m); ok && other != m {
					return fmt.Sprintf("did you mean {%s}? %s's %s %q names it %s", other, have.e.Name, hk, ht.String(), other)
				}
			}
		}
	}
	known := sortedAttrs(have.vars)
	for _, m := range miss {
		other := nearest(m, known)
		if other == "" {
			continue
		}
		if k, t, ok := keyVarOf(have, other); ok {
			return fmt.Sprintf("did you mean {%s}? %s's %s %q names it %s", other, have.e.Name, k, t.String(), other)
		}
		return fmt.Sprintf("did you mean {%s}? %s has the attribute %s", other, have.e.Name, other)
	}
	return ""
}

// renameOr starts a fix with the rename renameHint finds: "did you mean {userId}? ...: use
// one name in both templates, or ". Variables match by name, so that is the whole fix.
func renameOr(need, have *entityInfo, miss []string) string {
	if h := renameHint(need, have, miss); h != "" {
		return h + ": use one name in both templates, or "
	}
	return ""
}

// sameSlot reports the variable b has where a has variable name, when a and b have the same
// literal parts and variables in the same places. Templates without a literal are not
// compared: "{x}" and "{y}" say nothing about each other.
func sameSlot(a, b *keys.Template, name string) (string, bool) {
	pa, pb := a.Parts(), b.Parts()
	if len(pa) != len(pb) || a.IsLiteral() || len(a.Vars()) == len(pa) {
		return "", false
	}
	found := ""
	for i := range pa {
		switch {
		case pa[i].Var == "" && pb[i].Var == "":
			if pa[i].Literal != pb[i].Literal {
				return "", false
			}
		case pa[i].Var != "" && pb[i].Var != "":
			if pa[i].Var == name {
				found = pb[i].Var
			}
		default:
			return "", false
		}
	}
	return found, found != ""
}

// hasVars lists what e can fill a variable from, for messages: "User has: {userId} from
// its keys; avatar, name as attributes". A variable that is also an attribute is listed once,
// as an attribute.
func hasVars(e *entityInfo) string {
	var keyVars []string
	seen := map[string]bool{}
	for _, a := range e.e.Attributes {
		seen[a] = true
	}
	for _, k := range keyOrder(e.e) {
		if t := e.tmpl[k]; t != nil {
			for _, v := range t.Vars() {
				if !seen[v] {
					seen[v] = true
					keyVars = append(keyVars, v)
				}
			}
		}
	}
	attrs := append([]string(nil), e.e.Attributes...)
	sort.Strings(attrs)
	kv, at := "no variables in its keys", "no attributes"
	if len(keyVars) > 0 {
		kv = setList(keyVars) + " from its keys"
	}
	if len(attrs) > 0 {
		at = strings.Join(attrs, ", ") + " as attributes"
	}
	return fmt.Sprintf("%s has: %s; %s", e.e.Name, kv, at)
}

// keyVarOf returns the key attribute and template of e that hold variable name.
func keyVarOf(e *entityInfo, name string) (string, *keys.Template, bool) {
	for _, k := range keyOrder(e.e) {
		if t := e.tmpl[k]; t != nil {
			for _, v := range t.Vars() {
				if v == name {
					return k, t, true
				}
			}
		}
	}
	return "", nil, false
}
