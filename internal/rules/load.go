package rules

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"

	"gopkg.in/yaml.v3"
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
	// yaml.v3 is third-party code fed arbitrary input; whatever it does, Parse must return
	// a problem, not crash the Lambda or the CLI.
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
		return nil, Problems{yamlProblem(path, err)}
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		probs = append(probs, Problem{File: path, Pos: Pos{next.Line, next.Column},
			Msg: "a second YAML document follows '---': a rules file holds one document; move its content into the first"})
	case !errors.Is(err, io.EOF):
		probs = append(probs, yamlProblem(path, err))
	}
	if len(doc.Content) == 0 {
		return nil, append(probs, Problem{File: path, Pos: Pos{1, 1}, Msg: "the file is empty: start it with `version: 1`, then entities and rules"})
	}
	return doc.Content[0], probs
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlProblem turns a yaml.v3 syntax error into a Problem. yaml.v3 reports the line only,
// so the column is 1.
func yamlProblem(path string, err error) Problem {
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		if line, convErr := strconv.Atoi(m[1]); convErr == nil {
			return Problem{File: path, Pos: Pos{line, 1}, Msg: "YAML syntax: " + m[2] +
				" (check indentation, and quote values holding ': ' or starting with '{', '[' or '*')"}
		}
	}
	return Problem{File: path, Msg: "YAML syntax: " + msg}
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
