/// The job-file format as a JSON Schema (draft 2020-12), for editors that complete and
/// check job files. It is built from the key enums the loader validates with: every
/// `switch` below is exhaustive, so a key added to an enum does not compile until it is
/// described here too, and the schema lists exactly the keys the loader accepts.
import MirrorJSON
import MirrorModel

package enum JobFileSchema {
    /// The schema, as pretty-printed JSON ending with a line break.
    package static var text: String {
        var out = ""
        document.write(to: &out, indent: "")
        return out + "\n"
    }

    static var document: SchemaValue {
        .object([
            ("$schema", "https://json-schema.org/draft/2020-12/schema"),
            ("title", "mirror job file"),
            ("description", "A job file of mirror, version 1: where to write and which paged JSON APIs to mirror."),
            ("type", "object"),
            ("required", .array([.string(FileKey.version.rawValue), .string(FileKey.jobs.rawValue)])),
            ("properties", .object(FileKey.allCases.map { ($0.rawValue, $0.schema) })),
            ("additionalProperties", false),
            // `records` and `id` may be set once in `defaults` instead of in every job.
            ("allOf", .array(JobKey.allCases.filter { $0.isRequired && !$0.isJobOnly }.map { key in
                .object([
                    ("if", .object([
                        ("required", .array([.string(FileKey.defaults.rawValue)])),
                        ("properties", .object([(FileKey.defaults.rawValue, .object([("required", .array([.string(key.rawValue)]))]))])),
                    ])),
                    ("else", .object([
                        ("properties", .object([(FileKey.jobs.rawValue, .object([("items", requiredInJob(key))]))])),
                    ])),
                ])
            })),
            ("$defs", .object([
                ("job", jobObject(keys: JobKey.allCases, required: JobKey.allCases.filter(\.isJobOnly),
                                  description: "A job: one API walk stored in one table.")),
                ("defaults", jobObject(keys: JobKey.allCases.filter { !$0.isJobOnly }, required: [],
                                       description: "Keys every job of the file takes unless it sets them itself.")),
                ("pages", .object([
                    ("type", "object"),
                    ("properties", .object(PagesKey.allCases.map { ($0.rawValue, $0.schema) })),
                    ("additionalProperties", false),
                ])),
                ("stop", .object([
                    ("type", "object"),
                    ("properties", .object(StopKey.allCases.map { ($0.rawValue, $0.schema) })),
                    ("additionalProperties", false),
                ])),
                ("auth", .object([
                    ("description", "How requests say who sends them: one of the types, each with its own keys."),
                    ("type", "object"),
                    ("required", ["type"]),
                    ("oneOf", .array(AuthType.allCases.map(\.schema))),
                ])),
            ])),
        ])
    }

    /// A job's schema requiring `key`; `records` only where the job's format is JSON.
    static func requiredInJob(_ key: JobKey) -> SchemaValue {
        let required = SchemaValue.object([("required", .array([.string(key.rawValue)]))])
        guard key == .records else { return required }
        return .object([
            ("if", .object([("required", ["format"]), ("properties", .object([("format", .object([("enum", ["ndjson", "jsonl", "csv"])]))]))])),
            ("else", required),
        ])
    }

    static func jobObject(keys: [JobKey], required: [JobKey], description: String) -> SchemaValue {
        var members: [(String, SchemaValue)] = [("description", .string(description)), ("type", "object")]
        if !required.isEmpty { members.append(("required", .array(required.map { .string($0.rawValue) }))) }
        members.append(("properties", .object(keys.map { ($0.rawValue, $0.schema) })))
        members.append(("additionalProperties", false))
        return .object(members)
    }
}

// MARK: Values

/// A string that may hold `${NAME}`: its value is known only when the file is loaded, so
/// a pattern accepts any string with `${` in it. `expected` says what the pattern wants,
/// in an editor's message (`patternErrorMessage`, which yaml-language-server shows).
private func stringValue(_ description: String, pattern: String? = nil, expected: String? = nil,
                         default value: SchemaValue? = nil, examples: [String] = []) -> SchemaValue {
    // A plain YAML scalar that reads as a number (`account: 42`) is taken as its text.
    var members: [(String, SchemaValue)] = [("description", .string(description)), ("type", .array(["string", "number"]))]
    if let pattern { members.append(("pattern", .string("^(?:\(pattern))$|\\$\\{"))) }
    if let expected { members.append(("patternErrorMessage", .string("must be \(expected)"))) }
    if let value { members.append(("default", value)) }
    if !examples.isEmpty { members.append(("examples", .array(examples.map { .string($0) }))) }
    return .object(members)
}

private func integerValue(_ description: String, range: ClosedRange<Int>, default value: Int? = nil) -> SchemaValue {
    var members: [(String, SchemaValue)] = [("description", .string(description)), ("type", "integer"),
                                            ("minimum", .int(range.lowerBound)), ("maximum", .int(range.upperBound))]
    if let value { members.append(("default", .int(value))) }
    return .object(members)
}

private func booleanValue(_ description: String, default value: Bool) -> SchemaValue {
    .object([("description", .string(description)), ("type", "boolean"), ("default", .bool(value))])
}

private func choiceValue(_ description: String, _ values: [String], default value: String) -> SchemaValue {
    .object([("description", .string(description)), ("type", "string"),
             ("enum", .array(values.map { .string($0) })), ("default", .string(value))])
}

private let pathPattern = #"\.|/.*|(?:[^.\[\]]|\[[^\]]*\])+(?:\.(?:[^.\[\]]|\[[^\]]*\])+)*"#
private let durationPattern = #"[0-9.]+(?:ms|s|m|h|d)"#
private let sizePattern = "[0-9]+(?:[KkMmGg]?[Bb])?"

private func pathValue(_ description: String, examples: [String]) -> SchemaValue {
    stringValue(description, pattern: pathPattern, expected: "a dot path such as data.list, . for the whole response, or a JSON Pointer such as /@odata.nextLink",
                examples: examples)
}

private func durationValue(_ description: String, default value: String? = nil) -> SchemaValue {
    stringValue(description, pattern: durationPattern, expected: "a duration such as 30s, 5m or 12h",
                default: value.map { .string($0) }, examples: ["500ms", "30s", "5m", "12h", "7d"])
}

private func sizeValue(_ description: String, default bytes: Int) -> SchemaValue {
    stringValue(description, pattern: sizePattern, expected: "a size such as 500KB, 64MB or 1GB",
                default: .string(sizeText(bytes)), examples: ["500KB", "64MB", "1GB"])
}

/// `1ms to 7d`: the durations a key takes, for its description.
private func durationRange(_ range: ClosedRange<Double>) -> String {
    "\(durationText(range.lowerBound)) to \(durationText(range.upperBound))"
}

/// `1B to 1GB`: the sizes a key takes, for its description.
private func sizeRange(_ range: ClosedRange<Int>) -> String {
    "\(sizeText(range.lowerBound)) to \(sizeText(range.upperBound))"
}

/// `64 << 20` → `64MB`, as a job file would write it.
func sizeText(_ bytes: Int) -> String {
    for (unit, scale) in [("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)] where bytes > 0 && bytes % scale == 0 {
        return "\(bytes / scale)\(unit)"
    }
    return "\(bytes)B"
}

// MARK: Keys

extension FileKey {
    package var schema: SchemaValue {
        switch self {
        case .version:
            .object([("description", "The job-file format's version; this mirror reads 1."), ("const", 1)])
        case .output:
            stringValue("Output folder, relative to this file's folder. Without it (and without --output), ./cache, relative to the current folder.",
                        examples: ["../cache"])
        case .defaults:
            .object([("$ref", "#/$defs/defaults")])
        case .jobs:
            .object([("description", "The jobs, each with a name unique in the file."), ("type", "array"), ("minItems", 1),
                     ("items", .object([("$ref", "#/$defs/job")]))])
        case .auth:
            .object([("description", .string("Named auth definitions that jobs (and defaults) name in their 'auth': "
                        + "every job naming one shares its token.")),
                     ("type", "object"),
                     ("propertyNames", .object([("pattern", "^[A-Za-z0-9_-]+$")])),
                     ("additionalProperties", .object([("$ref", "#/$defs/auth")]))])
        case .notSecret:
            .object([("description", .string("Environment variables whose values are shown as they are in URLs, logs "
                        + "and errors (a port, a city id); every other ${NAME} is a secret.")),
                     ("type", "array"), ("items", .object([("type", "string"), ("pattern", "^[A-Za-z_][A-Za-z0-9_]*$")]))])
        }
    }
}

extension JobKey {
    /// Every job needs it, set by the job or by `defaults`.
    var isRequired: Bool {
        switch self {
        case .name, .url, .records, .id, .table: true
        case .method, .body, .headers, .pages, .next, .database, .account, .stop, .onChange, .prune, .shareTable, .timeout, .retries,
             .rateLimit, .concurrency, .refreshAfter, .validate, .downloads, .downloadConcurrency, .maxFileSize, .minDownloadRate, .maxPageSize,
             .incremental, .deleted, .parent, .auth, .maxWait, .propagateTrace, .shard, .columns, .explode, .drop, .hash, .format,
             .csv:
            false
        }
    }

    package var schema: SchemaValue {
        switch self {
        case .name:
            stringValue("Job name, used in logs, the summary and --job; unique in the file.", pattern: "[A-Za-z0-9_-]+",
                        expected: "letters, digits, _ and - only")
        case .url:
            .object([
                ("description", "URL template: {page} takes the page value, {cursor} the cursor (percent-encoded)."),
                ("type", "string"), ("pattern", #"^https?://|^\$\{"#),
                ("examples", ["https://api.example.com/v3/events?page={page}"]),
            ])
        case .method:
            .object([
                ("description", "HTTP method (any case)."), ("type", "string"),
                ("anyOf", .array([.object([("enum", ["GET", "POST"])]), .object([("pattern", "^(?:[Gg][Ee][Tt]|[Pp][Oo][Ss][Tt])$")])])),
                ("default", "GET"),
            ])
        case .body:
            .object([
                ("description", #"POST body: a mapping or list (sent as JSON) or a JSON string. A string that is exactly "{page}" becomes the page number; {page} and {cursor} inside other strings are replaced in place."#),
                ("type", .array(["object", "array", "string"])),
            ])
        case .headers:
            .object([
                ("description", "Request headers; a job's map is merged over the one in defaults."),
                ("type", "object"),
                ("propertyNames", .object([("pattern", "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")])),
                ("additionalProperties", .object([("type", .array(["string", "number"]))])),
            ])
        case .pages:
            .object([
                ("description", "The values {page} walks through: from, from+step, … up to to."),
                ("$ref", "#/$defs/pages"),
                ("default", .object([("from", .int(JobSpec.Pages.default.from)), ("step", .int(JobSpec.Pages.default.step))])),
            ])
        case .next:
            .object([
                ("description", "Cursor or next-link paging: a path in the response to the next cursor or next URL, 'link' for the Link: rel=\"next\" header, or one of url, cursor, header, scroll saying what the value is."),
                ("anyOf", .array([
                    stringValue("A path to the next cursor or URL, or 'link'.", pattern: pathPattern, examples: ["link", "paging.next"]),
                    .object([
                        ("type", "object"),
                        ("properties", .object(NextKey.allCases.map { ($0.rawValue, $0.schema) })),
                        ("additionalProperties", false),
                        ("minProperties", 1),
                        ("maxProperties", 2),
                    ]),
                ])),
            ])
        case .records:
            pathValue("Dot path to the array of records in a response; '.' for a top-level array.", examples: ["data.list", "."])
        case .id:
            pathValue("Dot path to the id inside a record.", examples: ["id", "user.id"])
        case .table:
            stringValue("SQLite table name, not starting with _mirror_ or sqlite_, and not sqlite (its index would be sqlite_walk_order).",
                        pattern: "(?![Ss][Qq][Ll][Ii][Tt][Ee](?:_|$)|_[Mm][Ii][Rr][Rr][Oo][Rr]_)[A-Za-z_][A-Za-z0-9_]*",
                        expected: "[A-Za-z_][A-Za-z0-9_]*, not starting with _mirror_ or sqlite_, and not sqlite")
        case .database:
            stringValue("SQLite file name inside the output folder; jobs may share one. Default: <table>.sqlite.",
                        pattern: #"[^./][^/]*"#, expected: "a file name inside the output folder", examples: ["items.sqlite"])
        case .account:
            stringValue("Partition key: records are unique per (account, id).", default: "")
        case .stop:
            .object([
                ("description", "Stop conditions that end the walk."),
                ("$ref", "#/$defs/stop"),
                ("default", .object([("empty", .bool(JobSpec.Stop.default.empty))])),
            ])
        case .onChange:
            choiceValue("A stored record whose content changed: replace updates it, keep leaves the first version.",
                   ["replace", "keep"], default: "replace")
        case .propagateTrace:
            booleanValue("Page and file requests carry the W3C traceparent of their span, so the API's own traces join "
                + "mirror's (with run --otlp-endpoint).", default: false)
        case .prune:
            booleanValue("After a complete walk, delete this table's records of this account that the walk did not see.", default: false)
        case .shareTable:
            booleanValue("This job and others of the same output folder store into one table under one account, "
                + "meaning it: one row per id whichever job stored it last; prune removes only ids this job's pages held.",
                default: false)
        case .timeout:
            durationValue("Per request: a page's whole exchange must end within it; \(durationRange(JobLimits.timeout)).", default: "30s")
        case .retries:
            integerValue("Retries after a network error, a timeout, a 5xx, 408 or 429, with exponential backoff.",
                         range: JobLimits.retries, default: 4)
        case .rateLimit:
            stringValue("Requests per second, minute or hour to this job's host, shared by every job of the run; "
                            + "\(JobLimits.rateCount.lowerBound) to \(JobLimits.rateCount.upperBound) requests.",
                        pattern: "[0-9]+/[smh]", expected: "requests per time such as 5/s, 100/m or 1000/h",
                        examples: ["5/s", "100/m", "1000/h"])
        case .concurrency:
            integerValue("Requests in flight for this job; pages are still stored in walk order.", range: JobLimits.concurrency,
                         default: 4)
        case .refreshAfter:
            durationValue("A page fetched less than this long ago is not requested again; --refresh ignores it; "
                          + "\(durationRange(JobLimits.refreshAfter)).")
        case .validate:
            .object([
                ("description", "Map of path to type: a response that does not match is rejected whole."),
                ("type", "object"),
                ("additionalProperties", .object([("enum", ["object", "array", "string", "number", "bool", "null"])])),
            ])
        case .downloads:
            .object([
                ("description", "Paths inside each stored record whose values are URLs of files to fetch; * walks every element."),
                ("anyOf", .array([pathValue("A path.", examples: ["cover.url"]),
                                  .object([("type", "array"), ("items", pathValue("A path.", examples: ["images.*.url"]))])])),
            ])
        case .downloadConcurrency:
            integerValue("Downloads in flight for this job.", range: JobLimits.concurrency, default: 8)
        case .maxFileSize:
            sizeValue("A larger download is abandoned and reported (units of 1024); \(sizeRange(JobLimits.fileSize)).",
                      default: JobSpec.defaultMaxFileSize)
        case .minDownloadRate:
            sizeValue("Bytes per second (units of 1024): a download slower than this on average, once it has run for "
                + "'timeout', is abandoned and reported; 0 never; \(sizeRange(JobLimits.downloadRate)).",
                default: JobSpec.defaultMinDownloadRate)
        case .maxPageSize:
            sizeValue("A larger response body is abandoned and rejected (units of 1024); \(sizeRange(JobLimits.pageSize)).",
                      default: JobSpec.defaultMaxPageSize)
        case .incremental:
            .object([
                ("description", .string("Incremental walks: {since} in the url, body or headers takes the highest value of a "
                    + "record path among the stored records, or the start time of the last complete walk (from: last_run).")),
                ("anyOf", .array([
                    pathValue("A record path whose highest stored value becomes {since}.", examples: ["updated_at", "id"]),
                    .object([
                        ("type", "object"),
                        ("properties", .object(IncrementalKey.allCases.map { ($0.rawValue, $0.schema) })),
                        ("additionalProperties", false),
                    ]),
                ])),
            ])
        case .auth:
            .object([
                ("description", "How this job's requests say who sends them: the name of a definition of the file's top-level auth, or a definition of its own."),
                ("anyOf", .array([
                    .object([("type", "string"), ("pattern", "^[A-Za-z0-9_-]+$")]),
                    .object([("$ref", "#/$defs/auth")]),
                ])),
            ])
        case .maxWait:
            durationValue("The longest wait the API may ask for (its request quota spent, a Retry-After) before the job "
                + "is deferred instead: it keeps what it stored and the first run after the time it may resume resumes there; "
                + "0s (defer at once) to \(durationText(JobLimits.maxWait.upperBound)).", default: "5m")
        case .shard:
            integerValue("Pins this job to one shard of mirror run --shard I/N (0 to N-1), with every job that must run beside "
                + "it: its parents and children, and the jobs of its database file in its output folder. "
                + "Unpinned, a group's shard is a hash of its first job's key; see mirror plan.",
                range: JobLimits.shard)
        case .columns:
            .object([
                ("description", .string("Generated columns of the record table, computed by SQLite from each record: "
                    + "name: path, or name: {path, type, index, stored}. A device selects and indexes them as any column; "
                    + "a value of another JSON type than the column's is NULL. Jobs storing into one table declare the same columns.")),
                ("type", "object"),
                ("propertyNames", .object([
                    ("pattern", .string("^(?![Aa][Cc][Cc][Oo][Uu][Nn][Tt]$|[Ii][Dd]$|[Rr][Ee][Cc][Oo][Rr][Dd]$|[Pp][Oo][Ss][Ii][Tt][Ii][Oo][Nn]$"
                        + "|[Ff][Ii][Rr][Ss][Tt]_[Ss][Ee][Ee][Nn]$|[Ll][Aa][Ss][Tt]_[Ss][Ee][Ee][Nn]$|[Pp][Aa][Rr][Ee][Nn][Tt]_[Ii][Dd]$)"
                        + "[A-Za-z_][A-Za-z0-9_]*$")),
                ])),
                ("additionalProperties", .object([
                    ("anyOf", .array([
                        pathValue("The record path of the column's value, any JSON type.", examples: ["venue.city", "tags.0"]),
                        .object([
                            ("type", "object"),
                            ("properties", .object(ColumnKey.allCases.map { ($0.rawValue, $0.schema) })),
                            ("additionalProperties", false),
                            ("required", .array(["path"])),
                        ]),
                    ])),
                ])),
            ])
        case .explode:
            .object([
                ("description", .string("Lists inside each record, read as rows of a view <table>__<name> with the columns "
                    + "account, parent_id (the record's id), idx (the element's position from 0) and element, then the "
                    + "element's own columns: name: path, or name: {path, columns}. Only an array gives rows. "
                    + "Jobs storing into one table declare the same lists.")),
                ("type", "object"),
                ("propertyNames", .object([("pattern", "^[A-Za-z_][A-Za-z0-9_]*$")])),
                ("additionalProperties", .object([
                    ("anyOf", .array([
                        pathValue("The record path of the list.", examples: ["tags", "order.lines"]),
                        .object([
                            ("type", "object"),
                            ("properties", .object(ExplodeKey.allCases.map { ($0.rawValue, $0.schema) })),
                            ("additionalProperties", false),
                            ("required", .array(["path"])),
                        ]),
                    ])),
                ])),
            ])
        case .drop:
            .object([
                ("description", .string("Record paths whose values are taken out of each record before it is stored, "
                    + "deduplicated, compared or put in the change feed; the walk still reads them (next, incremental, "
                    + "deleted, downloads). Not the id, nor a path a column reads.")),
                ("anyOf", .array([pathValue("A record path.", examples: ["email"]),
                                  .object([("type", "array"), ("items", pathValue("A record path.", examples: ["contact.phone"]))])])),
            ])
        case .format:
            .object([
                ("description", .string("What a response body is: json; ndjson (or jsonl), JSON Lines, each line that is not "
                    + "blank a record; csv, a header row then one record per row, each a JSON object of strings (typed where "
                    + "'columns' gives the header's name a type). With ndjson and csv there is no 'records' and no path into "
                    + "the response: page by 'link', a header or {page}. xml, an XML document read as JSON (attributes as "
                    + "'@name', repeated elements as arrays, mixed text as '#text'), 'records' an element path such as "
                    + "feed.entry; no DOCTYPE is read, no entity expanded.")),
                ("type", "string"), ("enum", ["json", "ndjson", "jsonl", "csv", "xml"]), ("default", "json"),
            ])
        case .csv:
            .object([
                ("description", "How a CSV body is read, with format: csv."),
                ("type", "object"),
                ("properties", .object(CSVKey.allCases.map { ($0.rawValue, $0.schema) })),
                ("additionalProperties", false),
            ])
        case .hash:
            .object([
                ("description", .string("Record paths whose values are replaced, before each record is stored, by the "
                    + "lowercase hex SHA-256 of the salt, a 0 byte and the value's JSON text: equal values still join.")),
                ("type", "object"),
                ("properties", .object(HashKey.allCases.map { ($0.rawValue, $0.schema) })),
                ("additionalProperties", false),
                ("required", .array(["salt", "paths"])),
            ])
        case .parent:
            stringValue("The name of another job of this file: this job is walked once per record of that one, "
                + "{parent.<path>} in its url, body and headers taking the values of that record.", examples: ["events"])
        case .deleted:
            .object([
                ("description", "A record marked deleted at this path is removed from the table."),
                ("anyOf", .array([
                    pathValue("A record path whose value, when true, a non-empty string or a number but 0, marks a deleted record.",
                              examples: ["deleted", "meta.is_deleted"]),
                    .object([
                        ("type", "object"),
                        ("properties", .object(DeletedKey.allCases.map { ($0.rawValue, $0.schema) })),
                        ("additionalProperties", false),
                        ("required", .array(["path"])),
                    ]),
                ])),
            ])
        }
    }
}

extension IncrementalKey {
    package var schema: SchemaValue {
        switch self {
        case .path: pathValue("A record path whose highest stored value becomes {since}.", examples: ["updated_at"])
        case .from: choiceValue("last_run: {since} is the start time of the job's last complete walk.", ["last_run"], default: "last_run")
        case .initial: stringValue("{since} while nothing is stored yet (and with --refresh).",
                                   examples: ["2024-01-01T00:00:00Z", "0"])
        case .lookback: durationValue("Moves a time {since} back, to take in late writes; \(durationRange(JobLimits.lookback)).")
        }
    }
}

extension ColumnKey {
    package var schema: SchemaValue {
        switch self {
        case .path: pathValue("The record path of the column's value.", examples: ["venue.city"])
        case .type:
            .object([
                ("description", .string("integer (a number written without . or e; past 64 bits its digits as text), "
                    + "real (any number), text (a string), boolean (1 or 0), time (a string that is an ISO 8601 timestamp); "
                    + "without it, any value as json_extract gives it.")),
                ("enum", .array(RecordColumn.Kind.allCases.map { .string($0.rawValue) })),
            ])
        case .index: booleanValue("An index on (account, <name>), named \"<table>.<name>\".", default: false)
        case .stored: booleanValue("Kept in each row (STORED), computed when a record is written, instead of when a row is read "
            + "(VIRTUAL): reads cost nothing, the file grows by the values, and adding, changing or removing it "
            + "rebuilds the table.", default: false)
        }
    }
}

extension ExplodeKey {
    package var schema: SchemaValue {
        switch self {
        case .path: pathValue("The record path of the list.", examples: ["order.lines"])
        case .columns:
            .object([
                ("description", .string("Columns of the view, read from each element: name: path, or name: {path, type}; "
                    + "'.' is the element itself. As the job's columns, but never indexed: a view has no index.")),
                ("type", "object"),
                ("propertyNames", .object([
                    ("pattern", .string("^(?!" + ExplodedList.viewColumns.map(caseless).joined(separator: "|")
                        + ")[A-Za-z_][A-Za-z0-9_]*$")),
                ])),
                ("additionalProperties", .object([
                    ("anyOf", .array([
                        pathValue("The element path of the column's value, any JSON type.", examples: ["sku", "."]),
                        .object([
                            ("type", "object"),
                            ("properties", .object(ColumnKey.allCases.map { key in
                                (key.rawValue, key == .index
                                    ? .object([("description", "A view cannot be indexed: false or absent."), ("const", .bool(false))])
                                    : key.schema)
                            })),
                            ("additionalProperties", false),
                            ("required", .array(["path"])),
                        ]),
                    ])),
                ])),
            ])
        }
    }
}

/// `name` matched whatever its case, whole: `[Ii][Dd][Xx]$`.
private func caseless(_ name: String) -> String {
    name.map { $0.isLetter ? "[\($0.uppercased())\($0.lowercased())]" : String($0) }.joined() + "$"
}

extension CSVKey {
    package var schema: SchemaValue {
        switch self {
        case .delimiter:
            .object([("description", "The byte between fields: one ASCII character, not a quote or line break."),
                     ("type", "string"), ("minLength", 1), ("maxLength", 1), ("not", .object([("enum", ["\"", "\r", "\n"])])),
                     ("default", ","), ("examples", [";", "\t", "|"])])
        }
    }
}

extension HashKey {
    package var schema: SchemaValue {
        switch self {
        case .salt:
            stringValue("The salt, a secret from an environment variable (not in not_secret), at least "
                + "\(JobFileReader.shortestSalt) bytes long.", pattern: "(?!)", expected: "an environment variable such as ${MIRROR_SALT}",
                examples: ["${MIRROR_SALT}"])
        case .paths:
            .object([
                ("description", "Record paths whose values are hashed."),
                ("anyOf", .array([pathValue("A record path.", examples: ["email"]),
                                  .object([("type", "array"), ("items", pathValue("A record path.", examples: ["contact.phone"]))])])),
            ])
        }
    }
}

extension DeletedKey {
    package var schema: SchemaValue {
        switch self {
        case .path: pathValue("The record path that marks a deleted record.", examples: ["status"])
        case .equals: stringValue("The value there that marks it.", examples: ["deleted"])
        }
    }
}

extension NextKey {
    package var schema: SchemaValue {
        switch self {
        case .url: pathValue("Path in the response to the next URL, absolute or relative to the request's.", examples: ["links.next"])
        case .cursor: pathValue("Path in the response to the next cursor, even one that looks like a URL.", examples: ["meta.cursor"])
        case .header: stringValue("A response header holding the next cursor or URL.", examples: ["X-Next-Page"])
        case .request: stringValue("With scroll: the URL of every request after the first, holding {cursor} (Elasticsearch's _search/scroll).",
                                   examples: ["https://es.example.com/_search/scroll?scroll=1m&scroll_id={cursor}"])
        case .scroll: pathValue("Path in the response to a scroll cursor, the same on every page; an empty page ends the walk.",
                                examples: ["scroll_param", "_scroll_id"])
        }
    }
}

extension PagesKey {
    package var schema: SchemaValue {
        switch self {
        case .from: integerValue("The first page value.", range: JobLimits.page, default: JobSpec.Pages.default.from)
        case .to: integerValue("The last page value; without it the walk goes on until a stop condition.", range: JobLimits.page)
        case .step: integerValue("Added to the page value for each page (100 for offset paging with limit=100).",
                                 range: JobLimits.step, default: JobSpec.Pages.default.step)
        }
    }
}

extension StopKey {
    package var schema: SchemaValue {
        switch self {
        case .empty:
            booleanValue("A page with no records ends the walk.", default: JobSpec.Stop.default.empty)
        case .known:
            .object([
                ("description", "Newest-first APIs: true (or page) ends the walk at a page whose ids were all stored before; record, at the first record stored before; since, at a page whose oldest incremental value is at or below {since}."),
                ("anyOf", .array([.object([("type", "boolean")]), .object([("type", "string"), ("enum", .array(["page", "record", "since"]))])])),
                ("default", false),
            ])
        case .status:
            .object([
                ("description", "HTTP statuses that end the walk cleanly."),
                ("anyOf", .array([
                    .object([("type", "integer"), ("minimum", 100), ("maximum", 599)]),
                    .object([("type", "array"), ("items", .object([("type", "integer"), ("minimum", 100), ("maximum", 599)]))]),
                ])),
                ("examples", .array([.array([404])])),
            ])
        case .lastPage:
            pathValue("Path in the response to the number of the last page (a number or a numeric string).",
                      examples: ["meta.last_page"])
        case .total:
            pathValue("Path in the response to the count of records in the whole walk (a number or a numeric string).",
                      examples: ["meta.total"])
        case .hasMore:
            pathValue("Path in the response to a flag: the walk ends after a page whose flag is false or missing.",
                      examples: ["has_more", "data.pageInfo.hasNextPage"])
        case .short:
            integerValue("The page size: a page of fewer records ends the walk.", range: JobLimits.shortPage)
        case .pages:
            pathValue("Path in the response to the count of pages in the whole walk (a number or a numeric string).",
                      examples: ["meta.total_pages"])
        }
    }
}

// MARK: JSON

/// A JSON value whose objects keep their members in the order given.
indirect enum SchemaValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral {
    case string(String)
    case int(Int)
    case bool(Bool)
    case array([SchemaValue])
    case object([(String, SchemaValue)])

    package init(stringLiteral value: String) { self = .string(value) }
    package init(integerLiteral value: Int) { self = .int(value) }
    package init(booleanLiteral value: Bool) { self = .bool(value) }
    package init(arrayLiteral elements: SchemaValue...) { self = .array(elements) }

    package func write(to out: inout String, indent: String) {
        switch self {
        case let .string(text): out += JSONText.quoted(text)
        case let .int(number): out += String(number)
        case let .bool(flag): out += flag ? "true" : "false"
        case let .array(items):
            // Short arrays of scalars stay on one line.
            if items.allSatisfy(\.isScalar) {
                out += "["
                for (index, item) in items.enumerated() {
                    if index > 0 { out += ", " }
                    item.write(to: &out, indent: indent)
                }
                out += "]"
                return
            }
            out += "[\n"
            for (index, item) in items.enumerated() {
                out += indent + "  "
                item.write(to: &out, indent: indent + "  ")
                out += index < items.count - 1 ? ",\n" : "\n"
            }
            out += indent + "]"
        case let .object(members):
            if members.isEmpty {
                out += "{}"
                return
            }
            out += "{\n"
            for (index, (key, value)) in members.enumerated() {
                out += indent + "  "
                out += JSONText.quoted(key)
                out += ": "
                value.write(to: &out, indent: indent + "  ")
                out += index < members.count - 1 ? ",\n" : "\n"
            }
            out += indent + "}"
        }
    }

    private var isScalar: Bool {
        switch self {
        case .string, .int, .bool: true
        case .array, .object: false
        }
    }
}

extension AuthType {
    /// One branch of `auth`: this `type` and the keys it takes.
    var schema: SchemaValue {
        .object([
            ("properties", .object([("type", .object([("const", .string(rawValue))]))]
                + AuthKey.allCases.filter { $0 != .type && keys.contains($0) }.map { ($0.rawValue, $0.schema) })),
            ("required", .array(([.type] + required).map { .string($0.rawValue) })),
            ("additionalProperties", false),
        ])
    }
}

extension AuthKey {
    package var schema: SchemaValue {
        switch self {
        case .type:
            .object([("description", "The kind of auth."), ("enum", .array(AuthType.allCases.map { .string($0.rawValue) }))])
        case .token: stringValue("bearer: the token, usually ${NAME}.", examples: ["${API_TOKEN}"])
        case .username: stringValue("basic: the user name.")
        case .password: stringValue("basic: the password, usually ${NAME}.")
        case .value: stringValue("api_key: the key, usually ${NAME}.")
        case .header: stringValue("The header the token or key is sent in.", default: "Authorization", examples: ["X-API-Key"])
        case .prefix: stringValue("Text before the token in its header ('Bearer ' for Authorization, nothing for any other header or for api_key).",
                                  examples: ["Bearer ", "token "])
        case .query: stringValue("The query parameter the token or key is sent in instead of a header.", examples: ["api_key"])
        case .cookie: stringValue("The cookie the token or key is sent in instead of a header.", examples: ["session"])
        case .grant:
            choiceValue("oauth2: the grant: client_credentials, or refresh_token (a refresh token from a login done once).",
                        AuthSpec.Grant.allCases.map(\.rawValue), default: "client_credentials")
        case .tokenURL: stringValue("The token endpoint.", pattern: #"https?://.*"#, expected: "an http(s) URL")
        case .clientID: stringValue("oauth2: the client id.")
        case .clientSecret: stringValue("oauth2: the client secret, usually ${NAME}.")
        case .clientAuth:
            choiceValue("oauth2: how the client proves itself: client_secret_post (in the form) or client_secret_basic (HTTP Basic).",
                        AuthSpec.ClientAuth.allCases.map(\.rawValue), default: "client_secret_post")
        case .scope: stringValue("The scope asked for (space-separated).")
        case .audience: stringValue("oauth2: the audience asked for; jwt: the aud claim.")
        case .params:
            .object([("description", "oauth2: further form parameters of every token request."), ("type", "object"),
                     ("additionalProperties", .object([("type", .array(["string", "number"]))]))])
        case .refreshToken: stringValue("oauth2 (grant refresh_token): the refresh token to start from.")
        case .tokenStore:
            stringValue("oauth2 (grant refresh_token): the file rotated refresh tokens are written to (mode 0600), outside the output folder; relative to this file's folder, ~/ for the home folder.",
                        examples: ["~/.local/state/mirror/salesforce.json"])
        case .refreshMargin: durationValue("A token is fetched anew this long before it ends.", default: "60s")
        case .tokenPath:
            pathValue("Where the token is in the token endpoint's (or login's) JSON answer.", examples: ["access_token", "data.token"])
        case .lifetime:
            durationValue("jwt: the assertion's lifetime (exp − iat, default 1h); others: how long a token lives when its answer has no expires_in or expires_at.")
        case .algorithm: .object([("description", "jwt: the signature algorithm."),
                                  ("enum", .array(AuthSpec.JWTAlgorithm.allCases.map { .string($0.rawValue) }))])
        case .privateKey: stringValue("jwt: the private key as PEM text, usually ${NAME}.")
        case .privateKeyFile: stringValue("jwt: a file holding the PEM private key, relative to this file's folder.")
        case .keyID: stringValue("jwt: the kid header.")
        case .issuer: stringValue("jwt: the iss claim.")
        case .subject: stringValue("jwt: the sub claim.")
        case .claims: .object([("description", "jwt: further claims."), ("type", "object")])
        case .exchange:
            choiceValue("jwt: none (the assertion is the bearer), assertion (RFC 7523 at token_url), bearer (POST to token_url with the assertion as bearer, as GitHub Apps).",
                        AuthSpec.JWT.Exchange.allCases.map(\.rawValue), default: "none")
        case .login:
            .object([("description", "session: the login request whose answer holds the token."), ("type", "object"),
                     ("required", ["url"]),
                     ("properties", .object(LoginKey.allCases.map { ($0.rawValue, $0.schema) })),
                     ("additionalProperties", false)])
        case .accessKey: stringValue("aws_sigv4: the access key id.")
        case .secretKey: stringValue("aws_sigv4: the secret access key, usually ${NAME}.")
        case .sessionToken: stringValue("aws_sigv4: the session token of temporary credentials.")
        case .region: stringValue("aws_sigv4: the region.", examples: ["us-east-1"])
        case .service: stringValue("aws_sigv4: the service name the signature is for.", examples: ["execute-api", "es", "s3"])
        }
    }
}

extension LoginKey {
    package var schema: SchemaValue {
        switch self {
        case .url: stringValue("The login URL.", pattern: #"https?://.*"#, expected: "an http(s) URL")
        case .method: .object([("description", "GET or POST (POST when there is a body)."), ("enum", ["GET", "POST"])])
        case .body: .object([("description", "The login body: a mapping (sent as JSON) or a string."),
                             ("type", .array(["object", "string"]))])
        case .headers: .object([("description", "Headers of the login request."), ("type", "object"),
                                ("additionalProperties", .object([("type", .array(["string", "number"]))]))])
        }
    }
}
