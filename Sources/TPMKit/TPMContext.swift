import CTSS2
import Glibc
import SystemKit

/// Owns one TCTI connection and the ESAPI context on top of it.
///
/// ESAPI contexts are not thread-safe: use an instance from one thread at a time (it is
/// deliberately not `Sendable`).
///
/// Waits: with the device TCTI the kernel's TPM driver bounds each command by the TPM 2.0
/// command durations; with any other, each answer is awaited at most `answerLimit`.
public final class TPMContext {
    private var tcti: OpaquePointer?
    var esys: OpaquePointer?

    /// Kernel resource manager first: it flushes our transient objects if we die.
    public static let defaultTCTI = "device:/dev/tpmrm0"

    /// The longest wait for one answer from the TPM, in milliseconds. ECC key creation and
    /// unsealing take milliseconds to a few hundred on hardware TPMs; a TPM silent this long
    /// is broken, and a login must not wait on it.
    public static let answerLimit: Int32 = 10_000

    /// libtss2 logs errors to stderr by default, which would land in sshd's or sudo's
    /// terminal. While any context is alive, TSS2_LOG says "none" (unless the user set it);
    /// the last one to go restores the environment, so a host process gets it back as it was.
    private static let quietLogs = LockedValue<(users: Int, ours: Bool)>((0, false))

    private static func silenceLogs() {
        quietLogs.locked { state in
            if state.users == 0 && getenv("TSS2_LOG") == nil {
                setenv("TSS2_LOG", "all+none", 1)
                state.ours = true
            }
            state.users += 1
        }
    }

    private static func restoreLogs() {
        quietLogs.locked { state in
            state.users -= 1
            if state.users == 0 && state.ours {
                unsetenv("TSS2_LOG")
                state.ours = false
            }
        }
    }

    /// Opens the TPM named by a TCTI configuration string, e.g. `device:/dev/tpmrm0` or
    /// `swtpm:host=127.0.0.1,port=2321`.
    public init(tcti configuration: String = TPMContext.defaultTCTI) throws(TPMError) {
        Self.silenceLogs()
        var tcti: OpaquePointer?
        let tctiRC = Tss2_TctiLdr_Initialize(configuration, &tcti)
        guard tctiRC == TSS2_RC_SUCCESS, tcti != nil else {
            Self.restoreLogs()
            throw TPMError.tctiUnavailable(code: tctiRC, message: TPMError.decode(tctiRC))
        }
        var esys: OpaquePointer?
        let esysRC = Esys_Initialize(&esys, tcti, nil)
        guard esysRC == TSS2_RC_SUCCESS, esys != nil else {
            // Esys_Initialize cleans up after itself on failure, the TCTI is still ours.
            Tss2_TctiLdr_Finalize(&tcti)
            Self.restoreLogs()
            throw TPMError.initializationFailed(code: esysRC, message: TPMError.decode(esysRC))
        }
        self.tcti = tcti
        self.esys = esys
        // The kernel's driver bounds every command to a TPM device itself; anything else (a
        // simulator's socket, a user-space resource manager) is bounded here. Not for both:
        // ESAPI's timed receive costs milliseconds per command.
        if !configuration.hasPrefix("device:") { _ = Esys_SetTimeout(esys, Self.answerLimit) }
    }

    deinit {
        // ESAPI first: it still talks through the TCTI while finalizing.
        Esys_Finalize(&esys)
        Tss2_TctiLdr_Finalize(&tcti)
        Self.restoreLogs()
    }

    /// Whether this machine exposes a TPM character device. Only looks at /dev; never probes
    /// the network or a simulator.
    public static func isPresent() -> Bool {
        access("/dev/tpmrm0", F_OK) == 0 || access("/dev/tpm0", F_OK) == 0
    }

    /// `count` bytes from the TPM's RNG.
    public func randomBytes(_ count: Int) throws(TPMError) -> [UInt8] {
        guard count >= 0 else { throw TPMError.invalidCount(count) }
        var output: [UInt8] = []
        output.reserveCapacity(count)
        // A TPM returns at most one digest's worth per call (32-64 bytes), so loop; each
        // round must make progress, which bounds the loop by `count` rounds.
        while output.count < count {
            let chunk = try randomChunk(UInt16(min(count - output.count, 64)))
            guard !chunk.isEmpty else {
                throw TPMError.commandFailed(code: 0, message: "TPM2_GetRandom returned no bytes")
            }
            output.append(contentsOf: chunk.prefix(count - output.count))
        }
        return output
    }

    private func randomChunk(_ requested: UInt16) throws(TPMError) -> [UInt8] {
        var digest: UnsafeMutablePointer<TPM2B_DIGEST>?
        let rc = Esys_GetRandom(esys, ESYS_TR(ESYS_TR_NONE), ESYS_TR(ESYS_TR_NONE), ESYS_TR(ESYS_TR_NONE),
                                requested, &digest)
        guard rc == TSS2_RC_SUCCESS, let digest else { throw TPMError.failed(rc) }
        defer {
            // The bytes may become key material: do not leave them in freed heap memory.
            memset(digest, 0, MemoryLayout<TPM2B_DIGEST>.size)
            Esys_Free(digest)
        }
        let size = min(Int(digest.pointee.size), MemoryLayout.size(ofValue: digest.pointee.buffer))
        return withUnsafeBytes(of: &digest.pointee.buffer) { Array($0.prefix(size)) }
    }
}

// Explicit: an ESAPI context must not be shared between threads.
@available(*, unavailable)
extension TPMContext: Sendable {}
