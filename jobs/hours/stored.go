package hours

// Stored says which Kafka record parts beyond the value the topic's data
// files hold, as columns appended to the value's record (the loader's
// store.kafka.keys, store.kafka.headers and store.kafka.coordinates). It
// is part of the topic's layout marker, so that every reader and the table
// registration know the columns the files have.
type Stored struct {
	Keys        bool
	Headers     bool
	Coordinates bool
}
