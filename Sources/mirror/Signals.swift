/// A signal stopped the command; the process exits with 128 + its number (130 for SIGINT,
/// 143 for SIGTERM, 129 for SIGHUP), as shells report it.
struct Interrupted: Error {
    let signal: Int32
    var exitStatus: Int32 { 128 + signal }
}
