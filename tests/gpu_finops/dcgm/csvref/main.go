// csvref reads CSV documents with Go's encoding/csv configured as dcgm-exporter 4.2.3-4.1.3 configures
// it (internal/pkg/counters: csv.NewReader, Comment = '#', ReadAll; every other option at its default),
// so tests/gpu_finops/dcgm/test_go_csv.py can hold infra/go_csv.py's reader to the real one.
//
// stdin: a JSON array of documents, each base64 ([]byte). stdout: a JSON array, one result per document:
// {"records": [[field, ...], ...]} with fields base64, or {"error": {kind, start_line, line, column, message}}.
package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"os"
)

type parseError struct {
	Kind      string `json:"kind"`
	StartLine int    `json:"start_line"`
	Line      int    `json:"line"`
	Column    int    `json:"column"`
	Message   string `json:"message"`
}

type result struct {
	Records [][][]byte  `json:"records,omitempty"`
	Error   *parseError `json:"error,omitempty"`
}

func read(doc []byte) result {
	r := csv.NewReader(bytes.NewReader(doc))
	r.Comment = '#'
	records, err := r.ReadAll()
	if err != nil {
		out := &parseError{Kind: "other", Message: err.Error()}
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			out.StartLine, out.Line, out.Column = pe.StartLine, pe.Line, pe.Column
			switch {
			case errors.Is(err, csv.ErrBareQuote):
				out.Kind = "bare_quote"
			case errors.Is(err, csv.ErrQuote):
				out.Kind = "quote"
			case errors.Is(err, csv.ErrFieldCount):
				out.Kind = "field_count"
			}
		}
		return result{Error: out}
	}
	res := result{Records: [][][]byte{}}
	for _, rec := range records {
		fields := make([][]byte, len(rec))
		for i, f := range rec {
			fields[i] = []byte(f)
		}
		res.Records = append(res.Records, fields)
	}
	return res
}

func main() {
	var docs [][]byte
	if err := json.NewDecoder(os.Stdin).Decode(&docs); err != nil {
		os.Stderr.WriteString("csvref: stdin is not a JSON array of base64 documents: " + err.Error() + "\n")
		os.Exit(2)
	}
	results := make([]result, len(docs))
	for i, doc := range docs {
		results[i] = read(doc)
	}
	if err := json.NewEncoder(os.Stdout).Encode(results); err != nil {
		os.Stderr.WriteString("csvref: " + err.Error() + "\n")
		os.Exit(2)
	}
}
