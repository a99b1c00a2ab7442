// Adds the indexes DynamoDB Local's stream table lacks, through the sqlite4java it ships.
//
// DynamoDB Local keeps stream records for 24 hours, deleted tables' included, in one SQLite
// table `us` whose only key is SequenceNumber. Every write to a table with a stream, and every
// GetRecords, looks up its stream's first record with
// `SELECT MIN(SequenceNumber) FROM us WHERE StreamID = ?`: a walk over every older record of
// every other stream. A long run (the test suite, a soak) then gets slower with each table it
// creates: measured here, 1,000 puts on a new table took 19 s after 30,000 records on an older
// stream, and 1.3 s with this index.
//
// The index is on StreamID alone. SequenceNumber is the table's INTEGER PRIMARY KEY, the
// rowid, which every index entry already ends with: SQLite then serves both the MIN above and
// GetRecords' `StreamID = ? AND SequenceNumber >= ?` from it. Naming SequenceNumber as a
// second column instead makes SQLite 3.8.7 (the version DynamoDB Local ships) use the index
// for StreamID only, so every GetRecords scanned its whole stream: on 300,000 records,
// 117 ms a call instead of 0.14 ms.
//
// GetRecords also asks for its shard's earliest record still kept
// (getEarliestNonExpiredSequenceNumberForShard: by ShardID and CreationDateTime, in sequence
// order), which without an index on ShardID walks every older record of every other stream.
// Measured on 2026-11-25: after TestFanOut20000Targets (20,000 comments renamed) on the same
// emulator, TestEachFaultAlone/none took 32.9 s with the StreamID index alone, 11.5 s with
// this one as well, and 13.4 s on a fresh emulator without it. jstack put 5 of 12 samples of
// the slow run in that query.
//
// Run by scripts/dynamodb-local.sh once the emulator answers (it has created its tables):
//
//	java -cp DynamoDBLocal_lib/sqlite4java.jar -Djava.library.path=DynamoDBLocal_lib StreamIndex.java DB_FILE
public class StreamIndex {
    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: StreamIndex DB_FILE");
            System.exit(2);
        }
        java.util.logging.Logger.getLogger("com.almworks.sqlite4java").setLevel(java.util.logging.Level.WARNING);
        com.almworks.sqlite4java.SQLiteConnection db = new com.almworks.sqlite4java.SQLiteConnection(new java.io.File(args[0]));
        db.open(false); // the file must exist: DynamoDB Local made it
        try {
            db.setBusyTimeout(30000);
            db.exec("CREATE INDEX IF NOT EXISTS denorm_us_stream ON us(StreamID)");
            db.exec("CREATE INDEX IF NOT EXISTS denorm_us_shard ON us(ShardID)");
        } finally {
            db.dispose();
        }
    }
}
