// A hardware id for device locking and leases: the OS machine id, hashed with the app id so two apps on
// one machine never see the same value and the raw machine id never leaves the machine. Apps may use
// their own id instead; this one changes when the OS is reinstalled.
#include <fstream>
#include <regex>
#include <sstream>

#include "internal.hpp"

#if defined(_WIN32)
#include <windows.h>
#elif defined(__APPLE__)
#include <cstdio>
#endif

namespace tollgate {

namespace {
std::string trim(const std::string& s) {
  const char* ws = " \t\n\r\f\v";
  auto b = s.find_first_not_of(ws);
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}
}  // namespace

std::string os_machine_id() {
  std::string id;
#if defined(_WIN32)
  // HKLM\SOFTWARE\Microsoft\Cryptography\MachineGuid, the 64-bit view also from a 32-bit process.
  char value[256];
  DWORD size = sizeof value;
  if (RegGetValueA(HKEY_LOCAL_MACHINE, "SOFTWARE\\Microsoft\\Cryptography", "MachineGuid",
                   RRF_RT_REG_SZ | RRF_SUBKEY_WOW6464KEY, nullptr, value, &size) == ERROR_SUCCESS)
    id = trim(value);
  const char* platform = "win32";
#elif defined(__APPLE__)
  // IOPlatformUUID from `ioreg -rd1 -c IOPlatformExpertDevice`, as the other SDKs.
  if (FILE* p = popen("/usr/sbin/ioreg -rd1 -c IOPlatformExpertDevice", "r")) {
    std::string out;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    pclose(p);
    std::smatch m;
    static const std::regex UUID("\"IOPlatformUUID\"\\s*=\\s*\"([^\"]+)\"");
    if (std::regex_search(out, m, UUID)) id = m[1].str();
  }
  const char* platform = "darwin";
#else
  for (const char* path : {"/etc/machine-id", "/var/lib/dbus/machine-id"}) {
    std::ifstream in(path);
    if (!in) continue;
    std::ostringstream text;
    text << in.rdbuf();
    id = trim(text.str());
    if (!id.empty()) break;
  }
  const char* platform = "linux";
#endif
  if (id.empty()) throw Error(std::string("tollgate: no machine id found on ") + platform + "; pass your own hardware_id");
  return id;
}

std::string hardware_id_from(const std::string& app_id, const std::string& machine_id) {
  return sha256_hex("tollgate/hwid/v1\n" + app_id + "\n" + machine_id);
}

std::string hardware_id(const std::string& app_id) { return hardware_id_from(app_id, os_machine_id()); }

}  // namespace tollgate
