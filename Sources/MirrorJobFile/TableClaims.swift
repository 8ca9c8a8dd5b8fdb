/// The tables the jobs of one output folder store into, and where two jobs would meet in
/// one SQLite table without meaning to. SQLite compares table names without case, and a
/// job's table brings an index named `<table>_walk_order`. A job's `explode` lists bring
/// views `<table>__<name>`: a view is named like no job's table of the folder, and like no
/// other table's view or index in its database.
package import MirrorModel

package struct TableClaims {
    /// The first job of each table, by database and table name, lowercased: each later job
    /// of the table was found alike with it in all but its account.
    private var claimed: [String: JobSpec] = [:]
    /// The first job of each account of a table, by database, table name and account.
    private var accounts: [String: JobSpec] = [:]
    /// The job whose table brings each index, by database and index name, lowercased.
    private var indexes: [String: JobSpec] = [:]
    /// The first job of each table name, lowercased, whatever its database.
    private var tableNames: [String: JobSpec] = [:]
    /// The job and list of each view, by view name, lowercased, whatever its database.
    private var views: [String: [(job: JobSpec, list: String)]] = [:]
    /// Jobs compared with a job claimed before them, for the tests.
    package private(set) var comparisons = 0

    package init() {}

    private static let indexSuffix = ReservedNames.walkOrderSuffix

    private static func key(_ database: String, _ table: String) -> String {
        database + "\u{0}" + table.lowercased()
    }

    /// Why a job cannot have its table or one of its views; `list` names the list whose
    /// view it is, nil for the table.
    package struct Conflict: Sendable, Equatable, CustomStringConvertible {
        package let message: String
        package let list: String?
        package var description: String { message }
    }

    /// Claims `job`'s table and views; returns why it cannot have them if a job claimed
    /// before stands in the way (and then claims nothing).
    package mutating func claim(_ job: JobSpec) -> Conflict? {
        let lower = job.table.lowercased()
        let table = Self.key(job.database, lower)
        let account = table + "\u{0}" + job.account
        var others: [JobSpec] = []
        if let first = claimed[table] {
            others.append(first)
            if job.account != first.account, let peer = accounts[account] { others.append(peer) }
        }
        for other in others {
            comparisons += 1
            if let reason = Self.conflict(job, other) { return Conflict(message: reason, list: nil) }
        }
        if lower.hasSuffix(Self.indexSuffix),
           let owner = claimed[Self.key(job.database, String(lower.dropLast(Self.indexSuffix.count)))] {
            return Conflict(message: "table '\(job.table)' in \(job.database) has the name of the index of job '\(owner.name)''s table "
                + "'\(owner.table)': name it otherwise", list: nil)
        }
        if let user = claimed[Self.key(job.database, lower + Self.indexSuffix)] {
            return Conflict(message: "the index of table '\(job.table)' in \(job.database) would be named "
                + "'\(job.table)\(Self.indexSuffix)', the name of job '\(user.name)''s table '\(user.table)': "
                + "name one of them otherwise", list: nil)
        }
        if let view = views[lower]?.first {
            return Conflict(message: "table '\(job.table)' has the name of the view of list '\(view.list)' of job "
                + "'\(view.job.name)' ('\(ExplodedList.viewName(table: view.job.table, list: view.list))' in "
                + "\(view.job.database)): name one of them otherwise", list: nil)
        }
        for index in ReservedNames.indexNames(of: job.table) {
            if let view = views[index.lowercased()]?.first(where: { $0.job.database == job.database }) {
                return Conflict(message: "the index '\(index)' of table '\(job.table)' in \(job.database) would have the "
                    + "name of the view of list '\(view.list)' of job '\(view.job.name)': name one of them otherwise", list: nil)
            }
        }
        for list in job.explode {
            let view = ExplodedList.viewName(table: job.table, list: list.name)
            let key = view.lowercased()
            if let owner = tableNames[key] {
                return Conflict(message: "the view of list '\(list.name)' would be named '\(view)', the name of job "
                    + "'\(owner.name)''s table '\(owner.table)' in \(owner.database): name one of them otherwise", list: list.name)
            }
            if let other = views[key]?.first(where: { $0.job.database == job.database && $0.job.table.lowercased() != lower }) {
                return Conflict(message: "the view of list '\(list.name)' would be named '\(view)' in \(job.database), "
                    + "the name of the view of list '\(other.list)' of job '\(other.job.name)''s table '\(other.job.table)': "
                    + "name one of them otherwise", list: list.name)
            }
            if let owner = indexes[Self.key(job.database, key)] {
                return Conflict(message: "the view of list '\(list.name)' would be named '\(view)' in \(job.database), "
                    + "the name of an index of job '\(owner.name)''s table '\(owner.table)': name one of them otherwise",
                    list: list.name)
            }
        }
        if claimed[table] == nil {
            claimed[table] = job
            for index in ReservedNames.indexNames(of: job.table) where indexes[Self.key(job.database, index)] == nil {
                indexes[Self.key(job.database, index)] = job
            }
        }
        if accounts[account] == nil { accounts[account] = job }
        if tableNames[lower] == nil { tableNames[lower] = job }
        // A view is the table's: the first job to bring it stands for the rest of the table's.
        for list in job.explode {
            let view = ExplodedList.viewName(table: job.table, list: list.name).lowercased()
            guard !(views[view] ?? []).contains(where: { $0.job.database == job.database && $0.job.table.lowercased() == lower })
            else { continue }
            views[view, default: []].append((job, list.name))
        }
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
        if job.explode != other.explode {
            return "job '\(job.name)' stores into table '\(job.table)' of \(job.database), as job '\(other.name)' does, "
                + "with other 'explode': jobs of one table declare the same lists"
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
