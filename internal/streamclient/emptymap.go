package streamclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// DynamoDB Local writes an empty map attribute as {} in stream records, where DynamoDB
// writes {"M":{}}. The SDK's Streams decoder turns {} into nil, or into the value of the
// attribute decoded before it, so a record with an empty map would be lost or corrupted
// on its way to the function. repairEmptyMaps rewrites GetRecords responses before the SDK
// decodes them; an attribute value is never {} in DynamoDB's own encoding, so the repair
// cannot change a well-formed response.
func repairEmptyMaps(stack *middleware.Stack) error {
	return stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("denormRepairEmptyMaps",
		func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleDeserialize(ctx, in)
			if err != nil || middleware.GetOperationName(ctx) != "GetRecords" {
				return out, md, err
			}
			resp, ok := out.RawResponse.(*smithyhttp.Response)
			if !ok || resp.StatusCode != 200 || resp.Body == nil {
				return out, md, err
			}
			body, rerr := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if rerr != nil {
				return out, md, fmt.Errorf("reading GetRecords response: %w", rerr)
			}
			if fixed, changed := RepairEmptyMaps(body); changed {
				body = fixed
			}
			resp.Body = io.NopCloser(bytes.NewReader(body))
			resp.ContentLength = int64(len(body))
			return out, md, nil
		}), middleware.After)
}

// RepairEmptyMaps returns a GetRecords response body with every attribute value {} in the
// records' Keys, NewImage and OldImage (at any depth) replaced by {"M":{}}, and whether it
// changed anything. A body it cannot parse is returned as it is, for the SDK to report.
func RepairEmptyMaps(body []byte) ([]byte, bool) {
	if !bytes.Contains(body, []byte("{}")) {
		return body, false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return body, false
	}
	recs, _ := doc["Records"].([]any)
	changed := false
	for _, r := range recs {
		rec, _ := r.(map[string]any)
		ddb, _ := rec["dynamodb"].(map[string]any)
		for _, image := range []string{"Keys", "NewImage", "OldImage"} {
			if m, ok := ddb[image].(map[string]any); ok {
				changed = repairMap(m) || changed
			}
		}
	}
	if !changed {
		return body, false
	}
	fixed, err := json.Marshal(doc)
	if err != nil {
		return body, false
	}
	return fixed, true
}

// repairMap repairs the attribute values of m, a map of name to attribute value.
func repairMap(m map[string]any) bool {
	changed := false
	for k, v := range m {
		av, ok := v.(map[string]any)
		if !ok {
			continue
		}
		if len(av) == 0 {
			m[k] = map[string]any{"M": map[string]any{}}
			changed = true
			continue
		}
		changed = repairValue(av) || changed
	}
	return changed
}

// repairValue repairs the members of a map or list attribute value.
func repairValue(av map[string]any) bool {
	if inner, ok := av["M"].(map[string]any); ok {
		return repairMap(inner)
	}
	list, ok := av["L"].([]any)
	if !ok {
		return false
	}
	changed := false
	for i, e := range list {
		ev, ok := e.(map[string]any)
		if !ok {
			continue
		}
		if len(ev) == 0 {
			list[i] = map[string]any{"M": map[string]any{}}
			changed = true
			continue
		}
		changed = repairValue(ev) || changed
	}
	return changed
}
