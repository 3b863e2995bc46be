import FingersealCore
import Glibc
import SodiumKit
import SystemKit

/// `fingerseal-bench clone-gallery STATE PIN SOURCE=UID:NAME,... TARGET=UID:NAME:SOURCEUID ...`
/// (identify-bench.py): a gallery of many accounts without enrolling each by hand. A vault
/// belongs to the account that made it, so a copied vault directory would be set aside as
/// another account's; each account gets a vault of its own here, made as the broker makes
/// them (a PIN slot, a device slot bound to its prints, touch to sign in on), with the prints
/// of the source account it names. The PIN slot's cost is the cheapest: nothing asks for it.
enum Gallery {
    static func clone(_ arguments: [String]) throws {
        guard arguments.count >= 2 else { throw SystemError("usage: clone-gallery STATE PIN SOURCE... -- TARGET...", code: EINVAL) }
        let state = arguments[0]
        let pin = try SecureBytes(copying: Array(arguments[1].utf8))
        func account(_ text: Substring) throws -> UserAccount {
            let fields = text.split(separator: ":")
            guard fields.count >= 2, let uid = UInt32(fields[0]) else { throw SystemError("bad account \(text)", code: EINVAL) }
            return UserAccount(name: String(fields[1]), uid: uid, gid: uid, home: "/nonexistent")
        }
        func store(_ account: UserAccount) -> VaultStore {
            VaultStore(location: .broker(stateDirectory: state, account: account))
        }
        var prints: [UInt32: [(finger: String, template: SecureBytes)]] = [:]
        for argument in arguments.dropFirst(2) {
            let fields = argument.split(separator: ":")
            if argument.hasPrefix("source=") {
                let source = try account(argument.dropFirst("source=".count))
                prints[source.uid] = try Vault.unlockWithDevice(store(source)).prints()
                continue
            }
            guard fields.count == 3, let sourceUID = UInt32(fields[2]), let from = prints[sourceUID] else {
                throw SystemError("bad target \(argument)", code: EINVAL)
            }
            let vault = try Vault.create(store(try account(argument[...])), pin: PINKeyslot(pin: pin, cost: .fastForTests))
            try vault.update { editor in
                for print in from { try editor.enroll(finger: print.finger, template: print.template) }
                editor.setIdentify(true)
            }
        }
    }
}
