// The example of docs/devices.md ("The app's own requests: `ReplicaURLProtocol`"), as it is written there.

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking  // URLSession on Linux
#endif
import MirrorDevice

/// A session whose requests to the API are answered from the replica while it has the page,
/// and by the API otherwise.
func eventsSession(replica: Replica) -> URLSession {
    ReplicaURLProtocol.register(replica, for: URL(string: "https://api.example.com")!, policy: .cacheElseNetwork)
    let configuration = URLSessionConfiguration.default
    configuration.protocolClasses = [ReplicaURLProtocol.self] + (configuration.protocolClasses ?? [])
    return URLSession(configuration: configuration)
}
