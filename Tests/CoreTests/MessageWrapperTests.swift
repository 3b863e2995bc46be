import FingerprintFlows
import FingersealCore
import Testing
@testable import TestSupport

/// Sentences that embed text from elsewhere (libfprint, errno, an identity provider, our own
/// sentences) end with exactly one period, whether or not that text brought its own.
@Suite struct MessageWrapperTests {
    /// Every wrapper that embeds foreign text, fed `text`.
    static func wrapped(_ text: String) -> [String: String] {
        [
            "vaultDamaged": Messages.vaultDamaged("vault.json", text),
            "unsafeFile": Messages.unsafeFile(text),
            "readerFailed": Messages.readerFailed(text),
            "revokeFailed": Messages.revokeFailed(text),
            "cannotWrite": Messages.cannotWrite("/tmp/x", text),
            "cannotRun": Messages.cannotRun("ls", text),
            "providerProblem": Messages.providerProblem(text),
            "providerUnreachable": Messages.providerUnreachable(text),
            "badOption": Messages.badOption("max_tries", text),
            "auditFallback": Messages.auditFallback(text),
            "auditFailure": Messages.auditFailure(.unlock, text),
            "auditTampered": Messages.auditTampered(text),
            "selftestFailed": Messages.selftestFailed("verify", text),
            "translate.device": Fingerprint.translate(.device(.general, code: 0, message: text)).message,
            "translate.other": Fingerprint.translate(.other(domain: "g-usb-device-error-quark", code: 3, message: text)).message,
        ]
    }

    @Test(arguments: ["Transfer timed out.", "Transfer timed out. ", "Transfer timed out..", "Transfer timed out.\n",
                      "Transfer timed out"])
    func oneClosingPeriod(_ text: String) {
        for (name, sentence) in Self.wrapped(text) {
            #expect(!sentence.contains(".."), "\(name): \(sentence)")
            #expect(!sentence.contains(". )") && !sentence.contains(".)") && !sentence.contains(". ."), "\(name): \(sentence)")
            #expect(sentence.contains("Transfer timed out"), "\(name): \(sentence)")
            #expect(sentence.hasSuffix("."), "\(name): \(sentence)")
        }
    }

    @Test func embeddedKeepsInnerPeriods() {
        #expect(Messages.embedded("e.g. this. ") == "e.g. this")
        #expect(Messages.embedded("...") == "")
        #expect(Messages.embedded("no period") == "no period")
        #expect(Messages.readerFailed("Transfer timed out.") == "The fingerprint reader reported an error: Transfer timed out.")
    }

    @Test func chipRefusalsAreExplained() {
        let duplicate = Fingerprint.translate(.device(.dataDuplicate, code: 9, message: "duplicate"))
        #expect(duplicate.outcome == .usage)
        #expect(duplicate.message == Messages.duplicateFinger)
        #expect(duplicate.message.contains("stored by another program"))
        let full = Fingerprint.translate(.device(.dataFull, code: 8, message: "full"))
        #expect(full.outcome == .unavailable)
        #expect(full.message == Messages.readerStorageFull)
        #expect(full.message.contains("never deletes other programs' prints"))
    }
}
