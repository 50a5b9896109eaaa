package broker

import (
	"context"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/acl"
	"github.com/tributary/tributary/broker/txn"
)

// handleListTransactions lists the transactional ids this broker
// coordinates that the principal may describe, filtered by state, producer
// id and (v1, KIP-994) how long their transaction has been running.
// Unknown state names come back in UnknownStateFilters; while a state
// partition is loading the answer is COORDINATOR_LOAD_IN_PROGRESS.
func (b *Broker) handleListTransactions(_ context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.ListTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	resp.Default()
	resp.SetVersion(req.Version)
	states := map[txn.State]bool{}
	for _, name := range req.StateFilters {
		s, ok := txn.ParseState(name)
		if !ok {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, name)
			continue
		}
		states[s] = true
	}
	if len(req.StateFilters) > 0 && len(states) == 0 {
		return kmsgReply{resp}, nil // only unknown states: nothing matches
	}
	pids := map[int64]bool{}
	for _, p := range req.ProducerIDFilters {
		pids[p] = true
	}
	txns, loading := b.txns.List()
	if loading {
		resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
		return kmsgReply{resp}, nil
	}
	now := time.Now().UnixMilli()
	sort.Slice(txns, func(i, j int) bool { return txns[i].TransactionalID < txns[j].TransactionalID })
	for _, tx := range txns {
		switch {
		case len(states) > 0 && !states[tx.State],
			len(pids) > 0 && !pids[tx.ProducerID],
			req.Version >= 1 && req.DurationFilterMillis >= 0 && (tx.StartMs < 0 || now-tx.StartMs < req.DurationFilterMillis),
			!b.authorizeQuiet(r, acl.OpDescribe, acl.ResourceTransactionalID, tx.TransactionalID):
			continue
		}
		st := kmsg.NewListTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.TransactionState = tx.TransactionalID, tx.ProducerID, tx.State.String()
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return kmsgReply{resp}, nil
}
