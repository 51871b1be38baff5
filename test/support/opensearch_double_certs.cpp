// Test CA and server certificate generation (see opensearch_double_certs.hpp).
#include "opensearch_double_certs.hpp"

#include <cstdio>
#include <memory>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "rfs/core/str_cat.hpp"

namespace rfs::testing {
namespace {

using core::StrCat;

struct KeyDeleter {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct CertDeleter {
  void operator()(X509* c) const { X509_free(c); }
};
using Key = std::unique_ptr<EVP_PKEY, KeyDeleter>;
using Cert = std::unique_ptr<X509, CertDeleter>;

Key NewKey() { return Key(EVP_RSA_gen(2048)); }

bool AddExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (ext == nullptr) return false;
  const bool ok = X509_add_ext(cert, ext, -1) == 1;
  X509_EXTENSION_free(ext);
  return ok;
}

Cert NewCert(EVP_PKEY* key, const std::string& common_name, long serial, X509* issuer,
             EVP_PKEY* issuer_key, bool is_ca, const std::vector<std::string>& sans,
             const char* extended_key_usage = "serverAuth") {
  Cert cert(X509_new());
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 86400L * 30);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1,
                             0);
  X509* signer = issuer != nullptr ? issuer : cert.get();
  X509_set_issuer_name(cert.get(), X509_get_subject_name(signer));
  bool ok = true;
  if (is_ca) {
    ok = ok && AddExtension(cert.get(), signer, NID_basic_constraints, "critical,CA:TRUE");
    ok = ok && AddExtension(cert.get(), signer, NID_key_usage, "critical,keyCertSign,cRLSign");
  } else {
    ok = ok && AddExtension(cert.get(), signer, NID_basic_constraints, "CA:FALSE");
    ok = ok && AddExtension(cert.get(), signer, NID_ext_key_usage, extended_key_usage);
    std::string alt;
    for (const auto& san : sans) alt += (alt.empty() ? "" : ",") + san;
    if (!alt.empty()) ok = ok && AddExtension(cert.get(), signer, NID_subject_alt_name, alt);
  }
  if (!ok || X509_sign(cert.get(), issuer_key != nullptr ? issuer_key : key, EVP_sha256()) == 0) {
    return nullptr;
  }
  return cert;
}

bool WritePem(const std::string& path, X509* cert, EVP_PKEY* key) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return false;
  const bool ok = cert != nullptr
                      ? PEM_write_X509(f, cert) == 1
                      : PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr) == 1;
  return std::fclose(f) == 0 && ok;
}

}  // namespace

absl::StatusOr<TestCertificates> MakeTestCertificates(
    const std::string& directory, const std::vector<std::string>& subject_alt_names) {
  Key ca_key = NewKey();
  Key server_key = NewKey();
  Key client_key = NewKey();
  if (!ca_key || !server_key || !client_key) {
    return absl::InternalError("RSA key generation failed");
  }
  Cert ca = NewCert(ca_key.get(), "rfs test CA", 1, nullptr, nullptr, true, {});
  if (!ca) return absl::InternalError("CA certificate generation failed");
  Cert server =
      NewCert(server_key.get(), "localhost", 2, ca.get(), ca_key.get(), false, subject_alt_names);
  if (!server) return absl::InternalError("server certificate generation failed");
  Cert client = NewCert(client_key.get(), "rfs test client", 3, ca.get(), ca_key.get(), false, {},
                        "clientAuth");
  if (!client) return absl::InternalError("client certificate generation failed");
  TestCertificates out{StrCat(directory, "/ca.pem"), StrCat(directory, "/server.pem"),
                       StrCat(directory, "/server-key.pem"), StrCat(directory, "/client.pem"),
                       StrCat(directory, "/client-key.pem")};
  if (!WritePem(out.ca_cert_file, ca.get(), nullptr) ||
      !WritePem(out.server_cert_file, server.get(), nullptr) ||
      !WritePem(out.server_key_file, nullptr, server_key.get()) ||
      !WritePem(out.client_cert_file, client.get(), nullptr) ||
      !WritePem(out.client_key_file, nullptr, client_key.get())) {
    return absl::InternalError(StrCat("cannot write certificates to ", directory));
  }
  return out;
}

}  // namespace rfs::testing
