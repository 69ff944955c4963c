// libpcap for NetsimPcap: writing (pcap_open_dead, pcap_dump_open, pcap_dump) and reading
// (pcap_open_offline, pcap_next_ex; pcapng too). Installed by ci/setup (libpcap-dev).
#include <pcap/pcap.h>
