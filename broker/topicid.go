package broker

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/tributary/tributary/broker/cluster"
)

// Files the broker keeps in a partition directory next to the storage
// engine's (frozen: they outlive upgrades).
const (
	// partitionMetadataFile records the identity of the topic the data
	// belongs to, in Kafka's format: "version: 0\ntopic_id: <id>\n".
	partitionMetadataFile = "partition.metadata"
	// topicConfigFile keeps the topic's config overrides, as JSON in the
	// layout of /config/topics/<topic>, so that a broker whose in-process
	// coordinator starts empty registers them again (see restoreTopics).
	topicConfigFile = "topic.config.json"
)

// readPartitionTopicID returns the topic id recorded in dir, "" when there is
// none (a directory written before ids existed, or not yet created).
func readPartitionTopicID(dir string) (string, error) {
	data, err := os.ReadFile(filepath.Join(dir, partitionMetadataFile))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "topic_id" {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("broker: %s in %s has no topic_id", partitionMetadataFile, dir)
}

// topicConfigRecord is the content of topicConfigFile.
type topicConfigRecord struct {
	Version int               `json:"version"`
	Config  map[string]string `json:"config"`
}

// readTopicConfigFile returns the overrides recorded in dir (nil if none).
func readTopicConfigFile(dir string) (map[string]string, error) {
	data, err := os.ReadFile(filepath.Join(dir, topicConfigFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r topicConfigRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("broker: %s in %s: %w", topicConfigFile, dir, err)
	}
	return r.Config, nil
}

// recordTopicIdentity writes the topic id and overrides into dir unless
// they are there already. Writes go through a temporary file and a rename,
// so a crash leaves the old content or the new.
func recordTopicIdentity(dir, id string, overrides map[string]string) error {
	if id != "" {
		content := []byte("version: 0\ntopic_id: " + id + "\n")
		if err := writeIfChanged(filepath.Join(dir, partitionMetadataFile), content); err != nil {
			return err
		}
	}
	if overrides == nil {
		overrides = map[string]string{}
	}
	content, err := json.Marshal(topicConfigRecord{Version: 1, Config: overrides})
	if err != nil {
		return err
	}
	return writeIfChanged(filepath.Join(dir, topicConfigFile), content)
}

func writeIfChanged(path string, content []byte) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, content) {
		return nil
	}
	// The storage engine removes stray *.tmp files when it opens the log.
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("broker: writing %s: %w", path, err)
	}
	_, err = f.Write(content)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("broker: writing %s: %w", path, err)
	}
	return nil
}

// wireTopicID is a topic id as the protocol carries it (Metadata v10+,
// CreateTopics v7, DeleteTopics v6): the 16 bytes of its text form. A
// topic without an id (not yet assigned by the controller) gets the zero
// id, which Kafka's clients read as "no id".
func wireTopicID(id string) [16]byte {
	var out [16]byte
	if b, err := base64.RawURLEncoding.Strict().DecodeString(id); err == nil && len(b) == len(out) {
		copy(out[:], b)
	}
	return out
}

// topicByWireID finds the topic whose id is id; the zero id names none.
func topicByWireID(snap cluster.Snapshot, id [16]byte) (cluster.Topic, bool) {
	if id == ([16]byte{}) {
		return cluster.Topic{}, false
	}
	for _, t := range snap.Topics {
		if t.ID != "" && wireTopicID(t.ID) == id {
			return t, true
		}
	}
	return cluster.Topic{}, false
}
