package broker

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleAPIVersions lists apiTable. A request version newer than ours is
// answered with UNSUPPORTED_VERSION in the v0 format, carrying our range for
// ApiVersions so that the client retries with a version we speak (KIP-511).
func (b *Broker) handleAPIVersions(_ context.Context, r *request) (reply, error) {
	resp := r.msg.ResponseKind().(*kmsg.ApiVersionsResponse)
	resp.Default()
	resp.SetVersion(r.msg.GetVersion())
	if r.unsupportedVersion {
		resp.ErrorCode = kerr.UnsupportedVersion.Code
	}
	keys := make([]int16, 0, len(apiTable))
	for k := range apiTable {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	for _, k := range keys {
		if r.unsupportedVersion && k != int16(kmsg.ApiVersions) {
			continue
		}
		spec := apiTable[k]
		v := kmsg.NewApiVersionsResponseApiKey()
		v.ApiKey, v.MinVersion, v.MaxVersion = k, spec.min, spec.max
		resp.ApiKeys = append(resp.ApiKeys, v)
	}
	return kmsgReply{resp}, nil
}
