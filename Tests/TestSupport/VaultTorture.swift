/// The vault-torture helper (Tests/Helpers/vault-torture, at `Paths.torture`): the PIN of the
/// vaults it makes (CrashTests, AuditTests).
enum VaultTorture {
    static let pin = "8642"
}
