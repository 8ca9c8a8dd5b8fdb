/// The tables the jobs of one output folder store into, and where two jobs would meet in
/// one SQLite table without meaning to. SQLite compares table names without case, and a
/// job's table brings an index named `<table>_walk_order`.
import MirrorModel

package struct TableClaims {
    /// Jobs by database and table name, lowercased.
    private var claimed: [String: [JobSpec]] = [:]

    package init() {}

    private static let indexSuffix = ReservedNames.walkOrderSuffix

    private static func key(_ database: String, _ table: String) -> String {
        database + "\u{0}" + table.lowercased()
    }

    /// Claims `job`'s table; returns why it cannot have it if a job claimed before stands
    /// in the way (and then claims nothing).
    package mutating func claim(_ job: JobSpec) -> String? {
        let lower = job.table.lowercased()
        for other in claimed[Self.key(job.database, lower)] ?? [] {
            if let reason = Self.conflict(job, other) { return reason }
        }
        if lower.hasSuffix(Self.indexSuffix),
           let owner = claimed[Self.key(job.database, String(lower.dropLast(Self.indexSuffix.count)))]?.first {
            return "table '\(job.table)' in \(job.database) has the name of the index of job '\(owner.name)''s table "
                + "'\(owner.table)': name it otherwise"
        }
        if let user = claimed[Self.key(job.database, lower + Self.indexSuffix)]?.first {
            return "the index of table '\(job.table)' in \(job.database) would be named '\(job.table)\(Self.indexSuffix)', "
                + "the name of job '\(user.name)''s table '\(user.table)': name one of them otherwise"
        }
        claimed[Self.key(job.database, lower), default: []].append(job)
        return nil
    }

    /// Two jobs whose tables have one name to SQLite.
    private static func conflict(_ job: JobSpec, _ other: JobSpec) -> String? {
        if job.table != other.table {
            return "table '\(job.table)' is table '\(other.table)' of job '\(other.name)' in \(job.database): "
                + "SQLite compares table names without case; spell them alike to share the table, or name another"
        }
        if job.columns != other.columns {
            return "job '\(job.name)' stores into table '\(job.table)' of \(job.database), as job '\(other.name)' does, "
                + "with other 'columns': jobs of one table declare the same columns"
        }
        if job.redaction != other.redaction {
            return "job '\(job.name)' stores into table '\(job.table)' of \(job.database), as job '\(other.name)' does, "
                + "with other 'drop' or 'hash' (paths or salt): the records of one table lose the same fields, hashed alike"
        }
        if job.account == other.account, !(job.shareTable && other.shareTable) {
            let account = job.account.isEmpty ? "no account" : "the same account"
            return "job '\(job.name)' stores into table '\(job.table)' of \(job.database) under \(account), as job "
                + "'\(other.name)' does: each would overwrite the other's records and prune delete them; "
                + "set share_table: true on both to mean it, or give one its own table or account"
        }
        return nil
    }
}
