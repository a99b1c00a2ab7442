package rules

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/denorm/denorm/internal/table"
)

// base is a valid file; cases append rules to it (rules start on line 18).
const base = `version: 1
entities:
  User:
    pk: "USER#{userId}"
    sk: PROFILE
    attributes: [name, avatar, postCount]
  Post:
    pk: "POST#{postId}"
    sk: METADATA
    attributes: [userId, title, commentCount, status]
  Comment:
    pk: "POST#{postId}"
    sk: "COMMENT#{createdAt}#{commentId}"
    gsi1pk: "USER#{userId}"
    gsi1sk: "COMMENT#{createdAt}"
    attributes: [text, userName, status]
rules:
`

// want is one expected problem: its "line:col" and context, and a fragment of its message.
type want struct{ at, frag string }

// problemsOf parses doc and returns its problems without the file name.
func problemsOf(t *testing.T, doc string) []string {
	t.Helper()
	_, err := Parse("t.yaml", []byte(doc))
	if err == nil {
		return nil
	}
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("Parse error is %T, want Problems: %v", err, err)
	}
	var out []string
	for _, p := range ps {
		out = append(out, strings.TrimPrefix(p.Error(), "t.yaml:"))
	}
	return out
}

// checkProblems asserts that got holds exactly the wanted problems, in order.
func checkProblems(t *testing.T, doc string, got []string, wants []want) {
	t.Helper()
	ok := len(got) == len(wants)
	for i := 0; ok && i < len(wants); i++ {
		ok = strings.HasPrefix(got[i], wants[i].at+": ") && strings.Contains(got[i], wants[i].frag)
	}
	if !ok {
		t.Errorf("problems:\n  %s\nwant:\n  %v\nfile:\n%s", strings.Join(got, "\n  "), wants, doc)
	}
}

func TestValidateRules(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rules string
		want  []want
	}{
		{"valid copy via index", `  - name: a
    copy: {from: User, to: Comment, via: gsi1, set: {userName: name}}
`, nil},
		{"missing name", `  - copy: {from: User, to: Comment, via: gsi1, set: {userName: name}}
`, []want{{`18:5: rule #1`, "has no name"}}},
		{"duplicate name", `  - name: a
    count: {of: Comment, into: Post, attribute: commentCount}
  - name: a
    count: {of: Post, into: User, attribute: postCount}
`, []want{{`20:11: rule "a"`, `name "a" is already used by the rule on line 18`}}},
		{"no kind", `  - name: a
`, []want{{`18:5: rule "a"`, "has no kind: add one of copy, mirror, count, sum, distinct, max, min, latest or top"}}},
		{"two kinds", `  - name: a
    count: {of: Comment, into: Post, attribute: commentCount}
    sum: {of: Comment, into: Post, value: status, attribute: commentCount}
`, []want{{`20:5: rule "a"`, "has both count and sum"}}},
		{"unknown field", `  - name: a
    count: {of: Comment, into: Post, atribute: commentCount}
`, []want{
			{`19:12: rule "a"`, "count needs attribute"},
			{`19:38: rule "a"`, `unknown field "atribute" in count (did you mean "attribute"?)`},
		}},
		{"unknown entity", `  - name: a
    copy: {from: Usr, to: Comment, set: {userName: name}}
`, []want{{`19:18: rule "a"`, `unknown entity "Usr" (did you mean "User"?)`}}},
		{"unknown attribute in set", `  - name: a
    copy: {from: User, to: Comment, via: gsi1, set: {userName: nmae}}
`, []want{{`19:54: rule "a"`, `User has no attribute "nmae" (did you mean "name"?)`}}},
		{"unknown attribute in mirror", `  - name: a
    mirror: {from: Comment, to: Comment, attributes: [txt]}
`, []want{
			{`19:55: rule "a"`, `Comment has no attribute "txt"`},
			{`19:55: rule "a"`, `Comment does not declare attribute "txt"`},
		}},
		{"unknown sum value and where attribute", `  - name: a
    sum: {of: Comment, into: Post, value: size, attribute: commentCount, where: {visible: true}}
`, []want{
			{`19:43: rule "a"`, `sum.value: Comment has no attribute "size"`},
			{`19:82: rule "a"`, `where visible: Comment has no attribute "visible"`},
		}},
		{"unknown via", `  - name: a
    copy: {from: User, to: Comment, via: gsi9, set: {userName: name}}
`, []want{{`19:42: rule "a"`, `via "gsi9" is not key, table or an index of the table (did you mean "gsi1"?)`}}},
		{"bad options", `  - name: a
    copy: {from: User, to: Comment, via: gsi1, set: {userName: name}, onSourceDelete: drop}
  - name: b
    count: {of: Comment, into: Post, attribute: commentCount, onExpiry: keep, missingTarget: make}
`, []want{
			{`19:87: rule "a"`, `onSourceDelete "drop" is not one of keep, remove, delete`},
			{`21:73: rule "b"`, `onExpiry "keep" is not one of remove, ignore`},
			{`21:94: rule "b"`, `missingTarget "make" is not one of skip, create`},
		}},
		{"bad exactlyOnce", `  - name: a
    count: {of: Post, into: User, attribute: postCount, exactlyOnce: markers}
`, []want{{`19:70: rule "a"`, `exactlyOnce "markers" is not one of relay, transaction`}}},
		{"writes a key attribute", `  - name: a
    copy: {from: User, to: Comment, via: gsi1, set: {gsi1sk: name}}
`, []want{{`19:54: rule "a"`, "rules may not write gsi1sk, a key attribute"}}},
		{"writes an undeclared attribute", `  - name: a
    count: {of: Comment, into: Post, attribute: comentCount}
`, []want{{`19:49: rule "a"`, `Post does not declare attribute "comentCount" (did you mean "commentCount"?)`}}},
		{"copy via key lacks variables", `  - name: a
    copy: {from: User, to: Post, via: key, set: {title: name}}
`, []want{
			{`19:39: rule "a"`, `via key: Post's pk "POST#{postId}" needs {postId}, which User does not have`},
		}},
		{"copy via table lacks variables", `  - name: a
    copy: {from: User, to: Post, via: table, set: {title: name}}
`, []want{{`19:39: rule "a"`, `via table: Post's pk "POST#{postId}" needs {postId}, which User does not have`}}},
		{"copy via index without template", `  - name: a
    copy: {from: User, to: Post, via: gsi1, set: {title: name}}
`, []want{{`19:39: rule "a"`, "via gsi1: Post has no gsi1pk template"}}},
		{"copy via index renders from a plain attribute", `  - name: a
    copy: {from: Post, to: Comment, via: gsi1, set: {text: title}}
`, nil},
		{"copy cannot fill a new target", `  - name: a
    copy: {from: Comment, to: User, via: table, set: {name: text}}
`, []want{{`19:31: rule "a"`, `User cannot supply {postId, createdAt, commentId} of Comment's pk "POST#{postId}" and sk "COMMENT#{createdAt}#{commentId}", needed to fill a newly inserted User from its Comment (pull on insert)`}}},
		{"copy with no way", `  - name: a
    copy: {from: User, to: Post, set: {title: name}}
`, []want{{`19:28: rule "a"`, `no way to find the Post targets of a User: via key: Post's pk "POST#{postId}" needs {postId}, which User does not have (add to its attributes); via table:`}}},
		{"mirror lacks variables", `  - name: a
    mirror: {from: User, to: Comment, attributes: [name]}
`, []want{
			{`19:30: rule "a"`, `Comment's pk "POST#{postId}" and sk "COMMENT#{createdAt}#{commentId}" and gsi1sk "COMMENT#{createdAt}" need {postId, createdAt, commentId}, which User does not have: mirror keys are rendered from the source`},
			{`19:52: rule "a"`, `Comment does not declare attribute "name"`},
		}},
		{"count lacks variables", `  - name: a
    count: {of: User, into: Post, attribute: commentCount}
`, []want{{`19:29: rule "a"`, `Post's pk "POST#{postId}" needs {postId}, which User does not have: each User must name the Post it adds to`}}},
		{"two writers", `  - name: a
    count: {of: Comment, into: Post, attribute: commentCount}
  - name: b
    sum: {of: Comment, into: Post, value: status, attribute: commentCount}
`, []want{{`21:62: rule "b"`, `writes Post.commentCount, which rule "a" (line 19) already writes`}}},
		{"cycle", `  - name: a
    copy: {from: Post, to: Post, via: key, set: {title: status}}
  - name: b
    copy: {from: Post, to: Post, via: key, set: {status: title}}
`, []want{{`18:5: rule "a"`, `rules form a cycle: rule "a" -> rule "b" -> rule "a" (rule "a" writes Post.title, which rule "b" watches; rule "b" writes Post.status, which rule "a" watches)`}}},
		{"self cycle through a count", `  - name: a
    count: {of: Post, into: Post, attribute: commentCount, where: {commentCount: 0}}
`, []want{{`18:5: rule "a"`, `rules form a cycle: rule "a" -> rule "a"`}}},
		{"reserved rule name", `  - name: _dnrule
    count: {of: Comment, into: Post, attribute: commentCount}
`, []want{{`18:11: rule "_dnrule"`, "rule name \"_dnrule\" starts with _dn"}}},
		{"bad rule name", `  - name: "a#b"
    count: {of: Comment, into: Post, attribute: commentCount}
`, []want{{`18:11: rule "a#b"`, "start with a letter and use letters, digits"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := base + tc.rules
			checkProblems(t, doc, problemsOf(t, doc), tc.want)
		})
	}
}

func TestValidateFileAndEntities(t *testing.T) {
	for _, tc := range []struct {
		name string
		doc  string
		want []want
	}{
		{"version missing", `entities:
  User: {pk: "USER#{userId}", sk: PROFILE}
`, []want{{`1:1`, "version is missing: start the file with `version: 1`"}}},
		{"version 2", `version: 2
entities:
  User: {pk: "USER#{userId}", sk: PROFILE}
`, []want{{`1:10`, "version must be 1"}}},
		{"no entities", `version: 1
`, []want{{`1:1`, "no entities: declare at least one"}}},
		{"entity without pk and sk", `version: 1
entities:
  User: {attributes: [name]}
`, []want{
			{`3:3: entity "User"`, "has no pk template"},
			{`3:3: entity "User"`, "has no sk template: the table has a sort key"},
		}},
		{"no sk needed without a table sort key", `version: 1
table: {partitionKey: id}
entities:
  User: {id: "USER#{userId}"}
`, nil},
		{"key attribute not in the table", `version: 1
entities:
  User: {pk: "USER#{userId}", sk: PROFILE, gsi3pk: "X", name: "n"}
`, []want{
			{`3:52: entity "User"`, `"gsi3pk" is not a key attribute of the table or its indexes`},
			{`3:63: entity "User"`, `"name" is not a key attribute of the table or its indexes (pk, sk, lsi0_sk`},
		}},
		{"bad template", `version: 1
entities:
  User: {pk: "USER#{userId", sk: "A#{x}{y}"}
`, []want{
			{`3:14: entity "User"`, `bad pk template: key template syntax: "USER#{userId": unclosed '{'`},
			{`3:34: entity "User"`, `variables {x} and {y} touch`},
		}},
		{"empty template", `version: 1
entities:
  User: {pk: "", sk: PROFILE}
`, []want{{`3:14: entity "User"`, "pk template is empty"}}},
		{"type without equals", `version: 1
entities:
  Task: {pk: "TASK#{taskId}", sk: TASK, type: {attribute: __edd_e__}}
`, []want{{`3:47: entity "Task"`, "type needs both attribute and equals"}}},
		{"reserved names", `version: 1
entities:
  _dnUser: {pk: "USER#{userId}", sk: PROFILE, attributes: [_dnx]}
  Marker: {pk: "_dn#marker#{id}", sk: M}
`, []want{
			{`3:3: entity "_dnUser"`, `entity name "_dnUser" starts with _dn`},
			{`3:60: entity "_dnUser"`, `attribute "_dnx" starts with _dn`},
			{`4:16: entity "Marker"`, `pk template "_dn#marker#{id}" starts with _dn, the prefix of Denorm's own items`},
		}},
		{"attribute that is a key", `version: 1
entities:
  User: {pk: "USER#{userId}", sk: PROFILE, attributes: [name, gsi1pk, name]}
`, []want{
			{`3:63: entity "User"`, `attribute "gsi1pk" is a key attribute of the table`},
			{`3:71: entity "User"`, `attribute "name" is listed twice`},
		}},
		{"ambiguous entities", `version: 1
entities:
  User: {pk: "USER#{userId}", sk: PROFILE}
  Admin: {pk: "USER#{adminId}", sk: "PROFILE"}
`, []want{{`4:3: entity "Admin"`, `may match the same items as entity "User" (line 3): their pk "USER#{userId}" and "USER#{adminId}", sk "PROFILE" and "PROFILE" can match the same value`}}},
		{"type tells entities apart", `version: 1
entities:
  Task: {pk: "ITEM#{id}", sk: ITEM, type: {attribute: __edd_e__, equals: Task}}
  Project: {pk: "ITEM#{id}", sk: ITEM, type: {attribute: __edd_e__, equals: Project}}
`, nil},
		{"one type does not tell entities apart", `version: 1
entities:
  Task: {pk: "ITEM#{id}", sk: ITEM, type: {attribute: __edd_e__, equals: Task}}
  Thing: {pk: "ITEM#{id}", sk: ITEM}
`, []want{{`4:3: entity "Thing"`, `may match the same items as entity "Task"`}}},
		{"literal segments tell entities apart", `version: 1
entities:
  User: {pk: "USER#{userId}", sk: PROFILE}
  Order: {pk: "USER#{userId}", sk: "ORDER#{orderId}"}
`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkProblems(t, tc.doc, problemsOf(t, tc.doc), tc.want)
		})
	}
}

func TestValidateTable(t *testing.T) {
	const ents = "entities:\n  User: {pk: \"USER#{userId}\", sk: PROFILE}\n"
	for _, tc := range []struct {
		name  string
		table string // lines 2..; entities follow
		want  []want
	}{
		{"no partition key", `table: {sortKey: sk}
`, []want{
			{`2:8: table`, "partitionKey is required"},
			{`4:14: entity "User"`, `"pk" is not a key attribute of the table or its indexes (sk)`},
		}},
		{"local indexes without a sort key", `table: {partitionKey: pk, localIndexes: [{name: l, sortKey: l_sk}]}
entities:
  User: {pk: "USER#{userId}"}
`, []want{{`2:41: table`, "local secondary indexes need a table sort key"}}},
		{"bad index names and projections", `table:
  partitionKey: pk
  sortKey: sk
  globalIndexes:
    - {name: g, partitionKey: gpk, projection: SOME}
    - {name: g, partitionKey: g2pk, projection: INCLUDE}
    - {name: key, partitionKey: g3pk, projection: KEYS_ONLY, include: [a]}
    - {name: _dng, partitionKey: g4pk}
    - {name: g5}
`, []want{
			{`6:48: table`, `index "g" has projection "SOME": use ALL, KEYS_ONLY or INCLUDE`},
			{`7:14: table`, `index name "g" is used twice`},
			{`7:49: table`, `index "g" has projection INCLUDE but no include attributes`},
			{`8:14: table`, `index name "key" is taken`},
			{`8:71: table`, `lists include attributes but its projection is KEYS_ONLY`},
			{`9:14: table`, `index name "_dng" starts with _dn`},
			{`10:7: table`, `global index "g5" needs a partitionKey`},
		}},
		{"ttl on a key and reserved key attribute", `table: {partitionKey: pk, sortKey: _dnsk, ttlAttribute: pk}
`, []want{
			{`2:36: table`, `key attribute "_dnsk" starts with _dn`},
			{`2:57: table`, `ttlAttribute "pk" is a key attribute`},
			{`4:3: entity "User"`, "has no _dnsk template"},
			{`4:35: entity "User"`, `"sk" is not a key attribute`},
		}},
		{"relay without a local index", `table: {partitionKey: pk, sortKey: sk}
entities:
  User: {pk: "USER#{userId}", sk: PROFILE, attributes: [postCount]}
  Post: {pk: "POST#{postId}", sk: METADATA, attributes: [userId]}
rules:
  - name: a
    count: {of: Post, into: User, attribute: postCount, exactlyOnce: relay}
`, []want{
			{`8:70: rule "a"`, "exactlyOnce relay needs a table with a sort key and at least one local index"},
		}},
		{"too many local indexes", `table:
  partitionKey: pk
  sortKey: sk
  localIndexes: [{name: a, sortKey: a}, {name: b, sortKey: b}, {name: c, sortKey: c}, {name: d, sortKey: d}, {name: e, sortKey: e}, {name: f, sortKey: sk}]
`, []want{
			{`5:17: table`, "6 local secondary indexes, DynamoDB allows at most 5"},
			{`5:152: table`, `local index "f" sort key "sk" repeats a table key`},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := "version: 1\n" + tc.table
			if !strings.Contains(tc.table, "entities:") {
				doc += ents
			}
			checkProblems(t, doc, problemsOf(t, doc), tc.want)
		})
	}
}

func TestValidateProjection(t *testing.T) {
	doc := `version: 1
table:
  partitionKey: pk
  sortKey: sk
  localIndexes: [{name: lsi0, sortKey: lsi0_sk}]
  globalIndexes: [{name: byUser, partitionKey: upk, projection: KEYS_ONLY}]
entities:
  User: {pk: "USER#{userId}", sk: PROFILE, attributes: [name]}
  Comment:
    pk: "POST#{postId}"
    sk: "C#{commentId}"
    lsi0_sk: "C#{commentId}"
    upk: "USER#{userId}"
    type: {attribute: kind, equals: comment}
    attributes: [userName]
rules:
  - name: a
    copy: {from: User, to: Comment, via: byUser, set: {userName: name}}
  - name: b
    copy: {from: User, to: Comment, set: {userName: name}}
`
	checkProblems(t, doc, problemsOf(t, doc), []want{
		{`18:42: rule "a"`, "via byUser: index byUser (projection KEYS_ONLY) does not project lsi0_sk, kind, needed to recognise Comment items"},
		{`20:28: rule "b"`, "no way to find the Comment targets of a User: via key: Comment's pk \"POST#{postId}\" and sk \"C#{commentId}\" need {postId, commentId}"},
		{`20:43: rule "b"`, `writes Comment.userName, which rule "a" (line 18) already writes`},
	})
}

// A variable one entity names differently from another is a rename, and the message says
// which name the other uses and what the entity can fill variables from.
func TestValidateVariableNames(t *testing.T) {
	const ents = `version: 1
entities:
  User:
    pk: "USER#{userId}"
    sk: PROFILE
    attributes: [name, taskCount]
  Task:
    pk: "PROJECT#{projectId}"
    sk: "TASK#{taskId}"
    gsi1pk: "USER#{assigneeId}"
    gsi1sk: "TASK#{taskId}"
    attributes: [title, assigneeId, userName]
  AssignedTask:
    pk: "USER#{assigneeId}"
    sk: "TASK#{taskId}"
    attributes: [title, userName]
  Note:
    pk: "NOTE#{noteId}"
    sk: "USER#{userID}"
    attributes: [userName]
rules:
`
	for _, tc := range []struct {
		name, rules string
		want        []want
	}{
		{"copy: the source's key names the variable otherwise", `  - name: a
    copy: {from: User, to: AssignedTask, via: table, set: {userName: name}}
`, []want{
			{`23:28: rule "a"`, `AssignedTask cannot supply {userId} of User's pk "USER#{userId}", needed to fill a newly inserted AssignedTask from its User (pull on insert): ` +
				`did you mean {assigneeId}? AssignedTask's pk "USER#{assigneeId}" names it assigneeId: use one name in both templates, or add userId to AssignedTask's attributes or keys ` +
				`(AssignedTask has: {assigneeId, taskId} from its keys; title, userName as attributes)`},
			{`23:47: rule "a"`, `via table: AssignedTask's pk "USER#{assigneeId}" needs {assigneeId}, which User does not have ` +
				`(did you mean {userId}? User's pk "USER#{userId}" names it userId: use one name in both templates, or add to its attributes); ` +
				`User has: {userId} from its keys; name, taskCount as attributes`},
		}},
		{"copy without via lists what the source has once", `  - name: a
    copy: {from: User, to: Task, set: {userName: name}}
`, []want{
			{`23:28: rule "a"`, `via gsi1: Task's gsi1pk "USER#{assigneeId}" needs {assigneeId}, which User does not have (did you mean {userId}? User's pk "USER#{userId}" names it userId: ` +
				`use one name in both templates, or add to its attributes); via gsi2: Task has no gsi2pk template; User has: {userId} from its keys; name, taskCount as attributes.`},
			{`23:28: rule "a"`, `Task cannot supply {userId} of User's pk`},
		}},
		{"count: the target's key names the variable otherwise", `  - name: a
    count: {of: AssignedTask, into: User, attribute: taskCount}
`, []want{{`23:37: rule "a"`, `User's pk "USER#{userId}" needs {userId}, which AssignedTask does not have: each AssignedTask must name the User it adds to; ` +
			`did you mean {assigneeId}? AssignedTask's pk "USER#{assigneeId}" names it assigneeId: use one name in both templates, or add userId to AssignedTask's attributes ` +
			`(AssignedTask has: {assigneeId, taskId} from its keys; title, userName as attributes)`}}},
		{"mirror: a near spelling", `  - name: a
    mirror: {from: Note, to: User, attributes: [userName]}
`, []want{
			{`23:30: rule "a"`, `User's pk "USER#{userId}" needs {userId}, which Note does not have: mirror keys are rendered from the source; did you mean {userID}? Note's sk "USER#{userID}" names it userID: use one name in both templates, or add userId to Note's attributes (Note has: {noteId, userID} from its keys; userName as attributes)`},
			{`23:49: rule "a"`, `User does not declare attribute "userName"`},
		}},
		{"count: the counted entity's index key names it otherwise", `  - name: a
    count: {of: Task, into: User, attribute: taskCount}
`, []want{{`23:29: rule "a"`, `User's pk "USER#{userId}" needs {userId}, which Task does not have: each Task must name the User it adds to; did you mean {assigneeId}? Task's gsi1pk "USER#{assigneeId}" names it assigneeId`}}},
		{"reading a key variable", `  - name: a
    copy: {from: Task, to: Task, via: key, set: {title: taskId}}
`, []want{{`23:50: rule "a"`, `copy.set title: Task has no attribute "taskId": {taskId} is part of its sk "TASK#{taskId}", and rules read attributes; ` +
			`declare taskId in Task's attributes and store it on the items (it has: assigneeId, gsi1pk, gsi1sk, pk, sk, title, userName)`}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := ents + tc.rules
			checkProblems(t, doc, problemsOf(t, doc), tc.want)
		})
	}
}

func ExampleValidate() {
	f := &File{Path: "inline", Version: 1, Table: table.Default(),
		Entities: []Entity{
			{Name: "Folder", Keys: map[string]string{"pk": "FOLDER#{folderId}", "sk": "METADATA"}, Attributes: []string{"totalBytes"}},
			{Name: "File", Keys: map[string]string{"pk": "FILE#{fileId}", "sk": "METADATA"}, Attributes: []string{"size"}},
		},
		Rules: []Rule{{Name: "folder-size", Kind: KindSum,
			Agg: &Aggregate{Of: "File", Into: "Folder", Value: "size", Attribute: "totalBytes"}}},
	}
	for _, p := range Validate(f) {
		fmt.Println(p)
	}
	// Output:
	// inline: rule "folder-size": Folder's pk "FOLDER#{folderId}" needs {folderId}, which File does not have: each File must name the Folder it adds to; add folderId to File's attributes (File has: {fileId} from its keys; size as attributes)
}

func ExampleChooseVia() {
	f, _ := Parse("app.yaml", []byte(`version: 1
entities:
  User: {pk: "USER#{userId}", sk: PROFILE, attributes: [name]}
  Comment: {pk: "POST#{postId}", sk: "C#{commentId}", gsi1pk: "USER#{userId}", attributes: [userName]}
rules:
  - name: comment-author
    copy: {from: User, to: Comment, set: {userName: name}}
`))
	fmt.Println(ChooseVia(f, f.Rules[0].Copy))
	// Output:
	// gsi1 true
}
