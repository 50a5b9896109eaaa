package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/acl"
)

// handleDescribeTransactions describes transactional ids this broker
// coordinates (Describe on each id; the partitions of topics the principal
// may not describe are left out, as Kafka does).
func (b *Broker) handleDescribeTransactions(_ context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.DescribeTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	resp.Default()
	resp.SetVersion(req.Version)
	auth := b.topicAuthorizer(r, acl.OpDescribe)
	for _, id := range req.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.ProducerEpoch, st.StartTimestamp = id, -1, -1, -1
		if !b.authorize(r, acl.OpDescribe, acl.ResourceTransactionalID, id) {
			st.ErrorCode = errTxnAuth.Code
			resp.TransactionStates = append(resp.TransactionStates, st)
			continue
		}
		tx, err := b.txns.Describe(id)
		if err != nil {
			st.ErrorCode = txnErrorCode(err, 0, 0)
			resp.TransactionStates = append(resp.TransactionStates, st)
			continue
		}
		st.State, st.TimeoutMillis, st.StartTimestamp = tx.State.String(), tx.TimeoutMs, tx.StartMs
		st.ProducerID, st.ProducerEpoch = tx.ProducerID, tx.ProducerEpoch
		for _, tp := range tx.Partitions {
			if !auth.allowed(tp.Topic) {
				continue
			}
			if n := len(st.Topics); n == 0 || st.Topics[n-1].Topic != tp.Topic {
				t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
				t.Topic = tp.Topic
				st.Topics = append(st.Topics, t)
			}
			st.Topics[len(st.Topics)-1].Partitions = append(st.Topics[len(st.Topics)-1].Partitions, tp.Partition)
		}
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return kmsgReply{resp}, nil
}
