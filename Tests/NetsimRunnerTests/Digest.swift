import Foundation
import Crypto

/// SHA-256 as lower-case hex, for expected digests in tests.
enum NetsimRunnerTestDigest {
    static func hex(_ bytes: [UInt8]) -> String {
        SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
    }
}
