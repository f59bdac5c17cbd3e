package topology

import (
	"fmt"
	"strconv"
	"strings"
)

// PCI class codes (base class << 16 | subclass << 8 | programming interface).
const (
	classBridgeHost   = 0x0600
	classBridgePCI    = 0x0604
	classDisplayVGA   = 0x0300
	classDisplay3D    = 0x0302
	classDisplayOther = 0x0380
	classNVMe         = 0x0108
	classBridgeOther  = 0x0680 // NVSwitch reports 0x068000
	classCoprocessor  = 0x0b40
	classAccelerator  = 0x1200
)

// ParseClass reads a PCI class code written as "0x030200", "030200" or
// "0302" and returns it as a 24-bit value (a 16-bit input is shifted left by 8).
func ParseClass(s string) (uint32, error) {
	t := strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(s), "0x"), "0X")
	v, err := strconv.ParseUint(t, 16, 32)
	if err != nil || len(t) == 0 || len(t) > 6 {
		return 0, fmt.Errorf("PCI class %q: want hex like 0x030200", s)
	}
	if len(t) <= 4 {
		v <<= 8
	}
	return uint32(v), nil
}

// KindForPCI returns the node kind of a PCI function from its 24-bit class
// code and vendor id. Bridges return KindBridge; whether a bridge is a root
// port or part of a switch depends on its place in the tree, which the
// caller knows. Display controllers of any GPU vendor are GPUs; an NVIDIA
// "other bridge" (0x0680) is an NVSwitch.
func KindForPCI(class uint32, vendorID string) Kind {
	sub := class >> 8
	base := class >> 16
	vendor := strings.ToLower(strings.TrimPrefix(vendorID, "0x"))
	switch {
	case sub == classNVMe:
		return KindNVMe
	case base == 0x01:
		return KindStorage
	case base == 0x02, sub == 0x0c06: // network controllers, InfiniBand
		return KindNIC
	case sub == classDisplayVGA, sub == classDisplay3D, sub == classDisplayOther:
		if computeGPUVendor(vendor) {
			return KindGPU
		}
		if (vendor == "" || vendor == "0000" || vendor == "ffff") && sub != classDisplayVGA {
			// No vendor in the file (NCCL dumps from some clouds): a 3D
			// controller is a compute GPU; BMC graphics are VGA controllers.
			return KindGPU
		}
		return KindOther
	case sub == classAccelerator, sub == classCoprocessor:
		return KindAccelerator
	case sub == classBridgeOther && vendor == "10de":
		return KindNVSwitch
	case sub == classBridgePCI || sub == 0x0609: // PCI-to-PCI, semi-transparent
		return KindBridge
	case sub == classBridgeHost:
		return KindRootPort
	}
	return KindOther
}

// onboardDisplays are display controllers of a GPU vendor that servers
// solder on the board for a console (the BMC's or the chipset's video),
// by vendor:device: never a GPU to train on. Vendors that make only such
// parts (ASPEED, Matrox, Nuvoton) are left out by computeGPUVendor.
var onboardDisplays = map[string]string{
	"1002:515e": "ATI ES1000 (onboard server video)",
	"1002:515f": "ATI ES1000 (onboard server video)",
	"1002:5159": "ATI Radeon 7000/VE RV100 (onboard server video)",
}

// highPointVendor is HighPoint Technologies' PCI vendor id.
const highPointVendor = "1103"

// KindForPCIDevice is KindForPCI with the device id: a display controller
// the board carries for its console (onboardDisplays: an ATI ES1000 on a
// Tesla server) or a CPU's integrated graphics (Intel's, by id) is not a
// GPU, and a HighPoint NVMe RAID carrier's own
// function is a storage controller, not an SSD.
func KindForPCIDevice(class uint32, vendorID, deviceID string) Kind {
	k := KindForPCI(class, vendorID)
	// HighPoint's NVMe RAID carriers (SSD7xxx) show their RAID engine as
	// an NVMe-class function beside the drives behind their switch: a
	// storage controller, not one more SSD.
	if k == KindNVMe && NormalizePCIID(vendorID) == highPointVendor {
		return KindStorage
	}
	if k == KindGPU {
		if _, onboard := onboardDisplays[NormalizePCIID(vendorID)+":"+NormalizePCIID(deviceID)]; onboard {
			return KindOther
		}
		// Intel's display functions are the CPU's integrated graphics
		// unless the id is one of its discrete GPUs.
		if NormalizePCIID(vendorID) == "8086" && deviceID != "" && !intelDiscreteGPU(NormalizePCIID(deviceID)) {
			return KindOther
		}
	}
	return k
}

// intelDiscreteGPU reports whether an Intel display device id is a
// discrete GPU: Data Center GPU Max (Ponte Vecchio, 0bd0-0bdb), Flex
// (56c0, 56c1), Arc and Arc Pro (5690-56bf), Arc B-series (e20b, e20c).
func intelDiscreteGPU(device string) bool {
	var id uint32
	if _, err := fmt.Sscanf(device, "%x", &id); err != nil {
		return false
	}
	return id >= 0x0bd0 && id <= 0x0bdb || id >= 0x5690 && id <= 0x56bf || id == 0x56c0 || id == 0x56c1 || id == 0xe20b || id == 0xe20c
}

// IsIntegratedGraphics says whether a display function named so is a
// CPU's integrated graphics ("Alder Lake-P Integrated Graphics
// Controller", "UHD Graphics 630"), for captures that give names but no
// ids.
func IsIntegratedGraphics(name string) bool {
	for _, s := range []string{"Integrated Graphics", "UHD Graphics", "HD Graphics", "Iris"} {
		if strings.Contains(name, s) {
			return true
		}
	}
	return false
}

// IsVirtualFunction says whether a NIC function is an SR-IOV virtual
// function rather than a port: pci.ids names them "... Virtual Function"
// (Intel I350, 82599, E810; Mellanox ConnectX), Cisco's usNIC functions
// "VIC Userspace NIC". A VF shares its physical function's port and link:
// counting it would multiply a board's NICs (18 functions, 6 ports, on
// hwloc's manyVFs server).
func IsVirtualFunction(name string) bool {
	n := strings.ToLower(name)
	return strings.Contains(n, "virtual function") || strings.Contains(n, "userspace nic")
}

// knownDevices names datacenter parts by vendor:device so output is readable
// without a pci.ids file. It is a convenience, not a source of truth: an
// unknown id prints as vendor:device in hex.
var knownDevices = map[string]string{
	"10de:06d2": "NVIDIA Tesla M2070",
	"10de:15f8": "NVIDIA Tesla P100 PCIe 16GB",
	"10de:1db4": "NVIDIA Tesla V100 PCIe 16GB",
	"10de:1db8": "NVIDIA Tesla V100 SXM3 32GB",
	"10de:1ac2": "NVIDIA NVSwitch",
	"10de:20b0": "NVIDIA A100 SXM4 40GB",
	"10de:20b2": "NVIDIA A100 SXM4 80GB",
	"10de:20b5": "NVIDIA A100 PCIe 80GB",
	"10de:20f1": "NVIDIA A100 PCIe 40GB",
	"10de:2330": "NVIDIA H100 SXM5 80GB",
	"10de:2331": "NVIDIA H100 PCIe 80GB",
	"10de:2322": "NVIDIA H800 PCIe 80GB",
	"10de:26b9": "NVIDIA L40S",
	"10de:26b1": "NVIDIA RTX 6000 Ada",
	"1002:738c": "AMD Instinct MI100",
	"1002:66a1": "AMD Instinct MI50",
	"8086:0953": "Intel SSD DC P3700 (NVMe)",
	"8086:0b60": "Intel SSD D7-P5510 (NVMe)",
	"144d:a80a": "Samsung 980 PRO (NVMe)",
	"144d:a808": "Samsung 970 EVO (NVMe)",
	"15b3:1003": "Mellanox ConnectX-3",
	"15b3:101b": "Mellanox ConnectX-6",
	"15b3:1021": "Mellanox ConnectX-7",
	"1d0f:efa0": "AWS EFA",
	"1af4:1041": "virtio network",
	"1af4:1042": "virtio block",
	"1af4:1000": "virtio network (legacy)",
	"1af4:1001": "virtio block (legacy)",
	"1000:c010": "Broadcom PEX88000 PCIe switch",
	"1000:c030": "Broadcom PEX89000 PCIe switch",
	"11f8:4000": "Microchip Switchtec PCIe switch",
	"10b5:9781": "PLX PEX9781 PCIe switch",
	"10b5:9797": "PLX PEX9797 PCIe switch",
	"10b5:8725": "PLX PEX8725 PCIe switch",
}

// DeviceName returns a readable name for vendor:device ids: the built-in
// name when known, else "vvvv:dddd" in hex.
func DeviceName(vendorID, deviceID string) string {
	key := NormalizePCIID(vendorID) + ":" + NormalizePCIID(deviceID)
	if n, ok := knownDevices[key]; ok {
		return n
	}
	if n, ok := onboardDisplays[key]; ok {
		return n
	}
	return key
}

// NormalizePCIID writes a PCI vendor or device id ("0x10DE", "10de") as
// gnnplan stores it: four lower-case hex digits without 0x.
func NormalizePCIID(s string) string {
	s = strings.ToLower(strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(s), "0x"), "0X"))
	for len(s) < 4 {
		s = "0" + s
	}
	return s
}

// GPUMemoryGiB returns the on-board memory of well-known GPUs in GiB, or 0.
func GPUMemoryGiB(vendorID, deviceID string) float64 {
	switch NormalizePCIID(vendorID) + ":" + NormalizePCIID(deviceID) {
	case "10de:15f8", "10de:1db4":
		return 16
	case "10de:1db8", "1002:66a1", "1002:738c":
		return 32
	case "10de:20b0", "10de:20f1":
		return 40
	case "10de:20b2", "10de:20b5", "10de:2330", "10de:2331", "10de:2322":
		return 80
	case "10de:26b9", "10de:26b1":
		return 48
	}
	return 0
}

// computeGPUVendor reports whether a display controller's vendor makes
// GPUs one trains on: NVIDIA, AMD (ATI's id and AMD's own) and Intel. Any
// other display controller is BMC or virtual console graphics (ASPEED
// 0x1a03, Matrox G200e 0x102b, Nuvoton 0x1050, Silicon Motion 0x126f,
// QEMU, QXL, VMware, Hyper-V, virtio-gpu), which no one trains on.
func computeGPUVendor(vendor string) bool {
	switch vendor {
	case "10de", "1002", "1022", "8086":
		return true
	}
	return false
}
