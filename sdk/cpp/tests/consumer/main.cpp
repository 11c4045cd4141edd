#include <iostream>
#include <tollgate/tollgate.hpp>

int main() {
  // The pieces need no server: a certificate that does not decode, a hash, the hardware id derivation.
  const tollgate::Pinned pinned{"app", "oqTx7FOCQ9mWZ3OKPYh4tj5w-zVgx-EVmZ0FJQ2iEJo"};
  const bool ok = tollgate::check_certificate("not-a-certificate", pinned, 0) == tollgate::CertificateVerdict::bad_certificate &&
                  tollgate::sha256_hex(std::string()) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" &&
                  tollgate::hardware_id_from("app", "machine").size() == 64 && tollgate::new_nonce().size() == 32;
  std::cout << (ok ? "consumer: tollgate::tollgate links and works\n" : "consumer: FAILED\n");
  return ok ? 0 : 1;
}
