package rules

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v4"
)

// Load reads the rules file at path and checks it: see Parse. A file that cannot be read
// gives a wrapped *fs.PathError, not Problems.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading rules file: %w", err)
	}
	return Parse(path, data)
}

// Parse reads a rules file from memory; path is used in messages only. It runs the three
// stages: YAML nodes, the typed File (keeping the position of every field), and Validate.
//
// The error, when not nil, is Problems: every problem found, in file order. The File is
// returned even then, filled as far as it could be read, so that callers can still show
// what was understood.
func Parse(path string, data []byte) (*File, error) {
	f := &File{Path: path}
	root, probs := parseYAML(path, data)
	if root == nil {
		return f, probs
	}
	d := newYAMLDecoder(f)
	d.decodeFile(root)
	probs = append(probs, d.probs...)
	if d.tooBig {
		// What was read is a fragment of a pathological file: checking it would only bury
		// the one problem that matters under consequences.
		return f, probs
	}
	for _, p := range Validate(f) {
		// A value of the wrong shape was reported once by stage 2 and dropped; what Validate
		// says about the resulting gap (a missing from, no pk) would repeat it.
		if !d.dropped[p.Pos] {
			probs = append(probs, p)
		}
	}
	if len(probs) == 0 {
		return f, nil
	}
	sortProblems(probs)
	return f, probs
}

// parseYAML is stage 1: the document's root node, or nil with the syntax problem.
func parseYAML(path string, data []byte) (root *yaml.Node, probs Problems) {
	// The YAML parser is third-party code fed arbitrary input; whatever it does, Parse must
	// return a problem, not crash the Lambda or the CLI.
	defer func() {
		if r := recover(); r != nil {
			root, probs = nil, Problems{{File: path, Msg: fmt.Sprintf("cannot read the file as YAML: %v", r)}}
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, Problems{{File: path, Pos: Pos{1, 1}, Msg: "the file is empty: start it with `version: 1`, then entities and rules"}}
		}
		return nil, Problems{yamlProblem(path, data, err)}
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		probs = append(probs, Problem{File: path, Pos: Pos{next.Line, next.Column},
			Msg: "a second YAML document follows '---': a rules file holds one document; move its content into the first"})
	case !errors.Is(err, io.EOF):
		probs = append(probs, yamlProblem(path, data, err))
	}
	if len(doc.Content) == 0 {
		return nil, append(probs, Problem{File: path, Pos: Pos{1, 1}, Msg: "the file is empty: start it with `version: 1`, then entities and rules"})
	}
	return doc.Content[0], probs
}

// syntaxHint ends every YAML syntax problem: the mistakes behind most of them.
const syntaxHint = " (check indentation, and quote values holding ': ' or starting with '{', '[' or '*')"

// yamlProblem turns a YAML syntax error into a Problem at the position the user must look
// at. The parser notices an unclosed '[', '{' or quote where it gives up, often lines later;
// its error also marks where that construct began, and there is the mistake. The parser has
// no error codes: the construct is told by its stage and the character at that mark.
func yamlProblem(path string, data []byte, err error) Problem {
	var le *yaml.LoadError
	if !errors.As(err, &le) {
		return Problem{File: path, Msg: "YAML syntax: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	at, ctx := markPos(le.Mark), markPos(le.ContextMark)
	data = bytes.TrimPrefix(data, []byte("\uFEFF")) // marks do not count a byte order mark
	opener := runeAt(data, ctx)
	switch {
	case le.Stage == yaml.ParserStage && opener == '[':
		return Problem{File: path, Pos: ctx, Msg: fmt.Sprintf("YAML syntax: the list this '[' opens lacks a ',' or its closing ']' "+
			"(expected at line %d, column %d); quote items holding ': '", at.Line, at.Col)}
	case le.Stage == yaml.ParserStage && opener == '{':
		return Problem{File: path, Pos: ctx, Msg: fmt.Sprintf("YAML syntax: the mapping this '{' opens lacks a ',' or its closing '}' "+
			"(expected at line %d, column %d); a template such as {userId} must be quoted", at.Line, at.Col)}
	case le.Stage == yaml.ScannerStage && (opener == '"' || opener == '\'') && le.Mark.Index >= utf8.RuneCount(data):
		return Problem{File: path, Pos: ctx, Msg: fmt.Sprintf("YAML syntax: the quoted value this %c opens is not closed: the file ends before its closing %c", opener, opener)}
	}
	msg := "YAML syntax: " + le.Message
	if ctx.Line > 0 && ctx != at && le.ContextMsg != "" {
		msg += fmt.Sprintf(" %s at line %d, column %d", le.ContextMsg, ctx.Line, ctx.Col)
	}
	return Problem{File: path, Pos: at, Msg: msg + syntaxHint}
}

// markPos converts a parser mark (1-based; line 0 when unknown) to a Pos.
func markPos(m yaml.Mark) Pos {
	if m.Line <= 0 {
		return Pos{}
	}
	return Pos{m.Line, max(m.Column, 1)}
}

// runeAt returns the character at p (columns count characters), or 0 if p is outside data.
func runeAt(data []byte, p Pos) rune {
	if p.Line <= 0 || p.Col <= 0 {
		return 0
	}
	for range p.Line - 1 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return 0
		}
		data = data[i+1:]
	}
	for col := 1; len(data) > 0 && data[0] != '\n'; col++ {
		r, n := utf8.DecodeRune(data)
		if col == p.Col {
			return r
		}
		data = data[n:]
	}
	return 0
}

// sortProblems puts problems in file order; problems without a position come first, and
// problems at one position keep the order they were found in.
func sortProblems(ps Problems) {
	sort.SliceStable(ps, func(i, j int) bool {
		a, b := ps[i].Pos, ps[j].Pos
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
}
