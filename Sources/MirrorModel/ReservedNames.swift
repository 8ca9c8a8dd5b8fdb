/// Names an output folder and its databases keep for mirror itself: the loader refuses a job
/// file that takes one, the store and the downloader create them.
package enum ReservedNames {
    /// The folder of downloaded files, beside the databases.
    package static let filesFolder = "files"
    /// Where files written before the schema version lived in `PRAGMA user_version` kept
    /// which migrations ran.
    package static let legacyMigrations = "grdb_migrations"
    /// The index of a record table that serves walk order: `<table>_walk_order`.
    package static let walkOrderSuffix = "_walk_order"
    /// The index of a child job's table that serves a parent's children: `<table>_by_parent`.
    package static let byParentSuffix = "_by_parent"

    /// The names of the indexes a record table brings (its triggers' start with `_mirror_`).
    package static func indexNames(of table: String) -> [String] {
        [table + walkOrderSuffix, table + byParentSuffix]
    }
}
