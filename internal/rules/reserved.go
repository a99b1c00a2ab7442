package rules

// Every item key and attribute name Denorm writes for itself, in one place (docs/rules.md,
// "What Denorm writes", lists them for users). Rules never match a reserved item, and the
// event filter lets through only the reserved items whose records the function acts on
// (fan-out jobs, relay items and probes).

// ReservedPrefix starts every item key and attribute name Denorm writes for itself.
const ReservedPrefix = "_dn"

// Items Denorm owns, by the prefix of their partition key.
const (
	// StatePrefix starts the partition key of a count or sum target's state item:
	// StatePrefix + the target's partition key, with the target's sort key. It holds the
	// exact values of every count and sum into the target, the watermarks that make them
	// exactly once, and their version; the target shows a copy.
	StatePrefix = ReservedPrefix + "#s#"
	// StatePartPrefix starts the partition key of a part of a split target's state
	// (Aggregate.Split): StatePartPrefix + the part's number + "#" + the target's partition
	// key, with the target's sort key. A split rule's deltas go to one of the parts, each in
	// a partition of its own, and the target's exact values are the state item's plus every
	// part's; a part's stream record copies them onto the target.
	StatePartPrefix = ReservedPrefix + "#h#"
	// RelayPrefix starts the partition key of a relay item: RelayPrefix + the target's
	// partition key; its sort key is a digest of the target's sort key and the source's key
	// (plan.RelayKey). It holds one source's deltas to a target in another partition, and
	// its stream record carries them to the target's state item. All relay items of one
	// target partition share a partition, so their records come in order on one shard.
	RelayPrefix = ReservedPrefix + "#r#"
	// DistinctRefPrefix starts the sort key of a distinct rule's reference item, in the
	// relay partition of its target (RelayPrefix + the target's partition key):
	// DistinctRefPrefix + the rule's name + "#" + a digest of the value + "#" + the target's
	// sort key (plan.DistinctRef). It holds, under the rule's attribute, how many sources
	// of the target hold that value; its stream record moves the target's distinct count
	// when that number goes from 0 to 1 or back.
	DistinctRefPrefix = "d#"
	// JobPrefix starts the partition key of fan-out job items: their stream records continue
	// a paged fan-out.
	JobPrefix = ReservedPrefix + "#job#"
	// MarkerPrefix starts the partition key of an idempotency marker (one per event, in
	// the transaction mode of counts and sums).
	MarkerPrefix = ReservedPrefix + "#m#"
	// RegistryPrefix starts the partition key of a fan-out's version registry item.
	RegistryPrefix = ReservedPrefix + "#ver#"
	// ProbePrefix starts the partition key of a probe: an item `denorm backfill` writes to
	// find out whether the stream processor runs and how far behind the table it is. The
	// function answers a probe's INSERT by writing ProbeAnswerAttr on it.
	ProbePrefix = ReservedPrefix + "#probe#"
	// StreamRegistryPK is the partition key (and sort key) of the stream registry: which
	// stream's records Denorm applies to the table, under which epoch, and which streams it
	// took over from (apply.StreamEpoch). Every sequence-number guard Denorm writes is a
	// position within an epoch (record.Position).
	StreamRegistryPK = ReservedPrefix + "#stream"
)

// Attributes of the stream registry (StreamRegistryPK): the current stream's ARN, its
// epoch, and the ARNs of the streams retired (a string set).
const (
	StreamCurrentAttr = ReservedPrefix + "_sc"
	StreamEpochAttr   = ReservedPrefix + "_se"
	StreamRetiredAttr = ReservedPrefix + "_sr"
)

// Attributes of a probe (ProbePrefix): when `denorm backfill` wrote it, and the stream
// processor's answer, the names of the rules it runs (a list of strings).
const (
	ProbeTimeAttr   = ReservedPrefix + "_pt"
	ProbeAnswerAttr = ReservedPrefix + "_pa"
)

// Attributes of a state item (StatePrefix). The aggregate values are kept under the
// target's attribute names (commentCount, totalBytes).
const (
	// StateVersionAttr rises by one with every write of the state item: the version of
	// its values, which the target's copy carries (CopyVersionAttr).
	StateVersionAttr = ReservedPrefix + "_v"
	// StateDecidedAttr, on a state item, is a string set of the digests of the rules whose
	// value a backfill or repair set there (rulesdiff.Digest): from that write on, the
	// processor's exactly-once deltas keep it exact, so a later run need not decide it again.
	StateDecidedAttr = ReservedPrefix + "_bf"
	// WatermarkAttr is the sequence number of the last record of the target's own
	// partition whose deltas the state holds (sources in the target's partition).
	WatermarkAttr = ReservedPrefix + "_wm"
	// RelayWatermarkAttr is the sequence number of the last relay item record whose
	// deltas the state holds (sources in other partitions, through RelayPrefix items).
	RelayWatermarkAttr = ReservedPrefix + "_wr"
)

// RefRepairAttr, on a distinct rule's reference item, rises by one with every write of it
// by `denorm backfill` or a repair, which sets the target's state in the same
// transaction: the stream processor leaves such a write's record alone.
const RefRepairAttr = ReservedPrefix + "_rp"

// CopyVersionAttr is the one attribute counts and sums add to the application's target
// item: the state version its aggregate attributes were copied from. A copy is written on
// condition that the item's is absent or not above it, so it never goes backwards.
const CopyVersionAttr = ReservedPrefix + "_cv"

// Attributes of a relay item (RelayPrefix): the target's sort key, the source's key (for
// people reading the table), the sequence number of the source's last record relayed,
// and the deltas of the last write, a map of rule name to amount.
const (
	RelayTargetAttr = ReservedPrefix + "_rt"
	RelaySourceAttr = ReservedPrefix + "_rs"
	RelaySeqAttr    = ReservedPrefix + "_rq"
	RelayDeltasAttr = ReservedPrefix + "_rd"
)

// Per-rule attributes on the application's items: the version of a copy or mirror, the
// (value, key) pair of a latest, and the version of a top list.
const (
	versionAttrPrefix   = ReservedPrefix + "v_"
	latestByAttrPrefix  = ReservedPrefix + "l_"
	latestKeyAttrPrefix = ReservedPrefix + "k_"
	topVersionPrefix    = ReservedPrefix + "t_"
)

// LegacyTargetAttrs are what versions before state items kept on count and sum targets
// (the watermark, the write count and the marks of restores and folds). `denorm cleanup
// --legacy` removes them, with LegacyParkPrefix items and relay items in the targets'
// partitions (sort key starting with RelayPrefix).
var LegacyTargetAttrs = []string{WatermarkAttr, ReservedPrefix + "_n", ReservedPrefix + "_wf", ReservedPrefix + "_wl",
	ReservedPrefix + "_fd", ReservedPrefix + "_xd", ReservedPrefix + "_xc"}

// LegacyParkPrefix started the partition key of the items that held a missing target's
// deltas before state items.
const LegacyParkPrefix = ReservedPrefix + "#p#"
