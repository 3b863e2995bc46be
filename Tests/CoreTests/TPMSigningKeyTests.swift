import Foundation
import Glibc
import Testing
@testable import TPMKit
@testable import TestSupport

extension InProcessTPM {
    /// The TPM's P-256 signing key (DPoP proofs): its signatures verify with an independent
    /// implementation (Python's cryptography, over OpenSSL) against the public point the TPM
    /// gave; it signs only with its authValue, only on the TPM that made it, and a wrong
    /// authValue is not counted by the machine's lockout.
    @Suite struct TPMSigningKeyTests {
        static let verifier = #"""
import sys
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, utils
x, y, message, rs = (bytes.fromhex(a) for a in sys.argv[1:5])
key = ec.EllipticCurvePublicNumbers(int.from_bytes(x, "big"), int.from_bytes(y, "big"), ec.SECP256R1()).public_key()
signature = utils.encode_dss_signature(int.from_bytes(rs[:32], "big"), int.from_bytes(rs[32:], "big"))
key.verify(signature, message, ec.ECDSA(hashes.SHA256()))
print("verified")
"""#

        static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

        static func sha256(_ message: [UInt8]) throws -> [UInt8] {
            let run = try Child.run("/usr/bin/python3", ["-c", "import hashlib,sys; print(hashlib.sha256(bytes.fromhex(sys.argv[1])).hexdigest())",
                                                         hex(message)])
            let text = run.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            return stride(from: 0, to: text.count, by: 2).map { offset in
                UInt8(text.dropFirst(offset).prefix(2), radix: 16) ?? 0
            }
        }

        @Test func itsSignaturesVerifyWithThePointItGave() throws {
            let swtpm = try SwtpmProcess()
            defer { swtpm.stop() }
            let tpm = try TPMContext(tcti: swtpm.tcti)
            let auth = Array(repeating: UInt8(9), count: 32)
            let made = try tpm.withStorageKey { key in try auth.withUnsafeBytes { try key.createSigningKey(authValue: $0) } }
            let message = Array("eyJ0eXAiOiJkcG9wK2p3dCJ9.eyJodG0iOiJQT1NUIn0".utf8)
            let digest = try Self.sha256(message)
            let rs = try tpm.withStorageKey { key in try auth.withUnsafeBytes { try key.sign(made.key, authValue: $0, digest: digest) } }
            #expect(rs.count == 64)
            let check = try Child.run("/usr/bin/python3", ["-c", Self.verifier, Self.hex(made.x), Self.hex(made.y), Self.hex(message), Self.hex(rs)])
            #expect(check.stdout.contains("verified"), "\(check.stderr)")
            // Nothing stays loaded after a signature.
            let left = try tpm.loadedHandles()
            #expect(left.objects.isEmpty && left.sessions.isEmpty, "\(left)")
        }

        @Test func aWrongAuthValueSignsNothingAndIsNotCounted() throws {
            let swtpm = try SwtpmProcess()
            defer { swtpm.stop() }
            let tpm = try TPMContext(tcti: swtpm.tcti)
            let made = try tpm.withStorageKey { key in try [UInt8](repeating: 1, count: 32).withUnsafeBytes { try key.createSigningKey(authValue: $0) } }
            let before = try tpm.dictionaryAttackState()
            for _ in 0..<5 {
                #expect(throws: TPMError.self) {
                    _ = try tpm.withStorageKey { key in
                        try [UInt8](repeating: 2, count: 32).withUnsafeBytes { try key.sign(made.key, authValue: $0, digest: Array(repeating: 0, count: 32)) }
                    }
                }
            }
            #expect(try tpm.dictionaryAttackState() == before, "outside the lockout: a wrong authValue is not counted")
        }

        /// Another TPM (another machine) does not take the key at all.
        @Test func anotherTPMDoesNotLoadIt() throws {
            let first = try SwtpmProcess(), second = try SwtpmProcess()
            defer { first.stop(); second.stop() }
            let auth = Array(repeating: UInt8(3), count: 32)
            let made = try TPMContext(tcti: first.tcti).withStorageKey { key in try auth.withUnsafeBytes { try key.createSigningKey(authValue: $0) } }
            let other = try TPMContext(tcti: second.tcti)
            #expect(throws: TPMError.self) {
                _ = try other.withStorageKey { key in try auth.withUnsafeBytes { try key.sign(made.key, authValue: $0, digest: Array(repeating: 0, count: 32)) } }
            }
        }
    }
}
