package broker

import (
	"context"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/acl"
)

// handleDescribeLogDirs lists, per log.dirs entry, the local replicas
// (led and followed) of the requested partitions (all when topics is
// null) with their size, the bytes of their segment files, and Kafka's
// offset lag, max(high watermark - log end offset, 0). Every log dir is
// listed, with its total and usable bytes from v4; a dir holding none of
// the requested partitions is listed empty, as Kafka does. A replica
// moving to another log dir is listed in both, IsFuture in the target.
func (b *Broker) handleDescribeLogDirs(_ context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.DescribeLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	resp.SetVersion(req.Version)
	if !b.authorizeCluster(r, acl.OpDescribe) {
		// Kafka answers no directories, and from v3 the error.
		resp.ErrorCode = errClusterAuth.Code
		return kmsgReply{resp}, nil
	}
	var wanted map[string][]int32
	if req.Topics != nil {
		wanted = map[string][]int32{}
		for _, rt := range req.Topics {
			wanted[rt.Topic] = append(wanted[rt.Topic], rt.Partitions...)
		}
	}
	byDir := map[string]map[string][]kmsg.DescribeLogDirsResponseDirTopicPartition{}
	for _, p := range b.partitions.All() {
		if wanted != nil && !slices.Contains(wanted[p.Topic()], p.Partition()) {
			continue
		}
		dir := filepath.Dir(p.Dir())
		if byDir[dir] == nil {
			byDir[dir] = map[string][]kmsg.DescribeLogDirsResponseDirTopicPartition{}
		}
		sp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
		sp.Partition, sp.Size = p.Partition(), p.Log().Size()
		sp.OffsetLag = max(p.HighWatermark()-p.Log().EndOffset(), 0)
		byDir[dir][p.Topic()] = append(byDir[dir][p.Topic()], sp)
	}
	// Replicas moving to another log dir (AlterReplicaLogDirs) are listed
	// there too, as Kafka's future replicas: their lag is behind the
	// current replica's end.
	for _, mv := range b.futureReplicas() {
		size, lag, ok := mv.progress()
		if !ok || wanted != nil && !slices.Contains(wanted[mv.tp.Topic], mv.tp.Partition) {
			continue
		}
		if byDir[mv.target] == nil {
			byDir[mv.target] = map[string][]kmsg.DescribeLogDirsResponseDirTopicPartition{}
		}
		sp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
		sp.Partition, sp.Size, sp.OffsetLag, sp.IsFuture = mv.tp.Partition, size, lag, true
		byDir[mv.target][mv.tp.Topic] = append(byDir[mv.target][mv.tp.Topic], sp)
	}
	for _, dir := range b.cfg.LogDirs {
		rd := kmsg.NewDescribeLogDirsResponseDir()
		rd.Dir = dir
		topics := byDir[filepath.Clean(dir)]
		names := make([]string, 0, len(topics))
		for name := range topics {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			rt := kmsg.NewDescribeLogDirsResponseDirTopic()
			rt.Topic, rt.Partitions = name, topics[name]
			slices.SortFunc(rt.Partitions, func(a, b kmsg.DescribeLogDirsResponseDirTopicPartition) int { return int(a.Partition - b.Partition) })
			rd.Topics = append(rd.Topics, rt)
		}
		rd.TotalBytes, rd.UsableBytes = -1, -1
		var st syscall.Statfs_t
		if err := syscall.Statfs(dir, &st); err == nil {
			rd.TotalBytes = int64(st.Blocks) * st.Bsize
			rd.UsableBytes = int64(st.Bavail) * st.Bsize
		}
		resp.Dirs = append(resp.Dirs, rd)
	}
	return kmsgReply{resp}, nil
}
