// The hardware catalog: the GPUs and NVMe SSDs one can buy, with prices and
// datasheet rates, and what a server costs besides them (Hyperion section
// VI). The TPC model (throughput per dollar, Hyperion III-C) prices every
// candidate plan with it; `gnnplan recommend --catalog FILE` merges a user's
// file over the built-in one.
//
// Units are in the names, as everywhere in gnnplan: prices in USD, rates in
// decimal GB/s ("GBps") and TFLOPS, IOPS per second, SSD capacity in decimal
// GB, GPU and host memory in GiB. Every built-in entry says in Sources where
// each figure comes from; a figure that is not quoted from a paper or a
// vendor's datasheet is marked "estimate:" with the reason.

package profiles

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gnnplan/gnnplan/topology"
)

// CatalogSchemaVersion is the schema_version catalog files must carry.
const CatalogSchemaVersion = 1

// GPUModel is a GPU one can buy.
type GPUModel struct {
	Key         string  `json:"key" yaml:"key"`                   // "a100-80gb-pcie"
	Name        string  `json:"name" yaml:"name"`                 // "NVIDIA A100 80GB PCIe"
	PriceUSD    float64 `json:"price_USD" yaml:"price_USD"`       // one card
	MemoryGiB   float64 `json:"memory_GiB" yaml:"memory_GiB"`     // device memory
	PCIeGen     int     `json:"pcie_gen" yaml:"pcie_gen"`         // host link generation
	Lanes       int     `json:"lanes" yaml:"lanes"`               // host link width, 16
	DoubleWidth bool    `json:"double_width" yaml:"double_width"` // needs a double-width slot
	FP32TFLOPS  float64 `json:"fp32_TFLOPS" yaml:"fp32_TFLOPS"`   // dense FP32 (non-tensor) peak, datasheet
	TF32TFLOPS  float64 `json:"tf32_TFLOPS" yaml:"tf32_TFLOPS"`   // dense TF32 tensor peak (no sparsity), datasheet
	MemGBps     float64 `json:"mem_GBps" yaml:"mem_GBps"`         // HBM/GDDR bandwidth, datasheet
	Sources     string  `json:"sources" yaml:"sources"`           // where each figure comes from; "estimate:" for estimates
	// PowerW is the card's board power (datasheet maximum), for the
	// check of a plan against the host's power supplies; 0 is unknown.
	PowerW float64 `json:"power_W,omitempty" yaml:"power_W,omitempty"`
	// Arch is the architecture a topology file may give instead of a
	// model name ("sm80" from NCCL's sm attribute, "gfx908" from RCCL's
	// gcn), so that an installed GPU known only by it matches.
	Arch string `json:"arch,omitempty" yaml:"arch,omitempty"`
	// InstalledOnly models are priced and predicted where a machine has
	// them but never recommended to buy: modules no PCIe slot takes (SXM,
	// OAM), GPUs the trainer has no backend for, cards no longer sold.
	InstalledOnly bool `json:"installed_only,omitempty" yaml:"installed_only,omitempty"`
}

// SSDModel is an NVMe SSD one can buy.
type SSDModel struct {
	Key          string  `json:"key" yaml:"key"` // "p5510-3.84tb"
	Name         string  `json:"name" yaml:"name"`
	PriceUSD     float64 `json:"price_USD" yaml:"price_USD"`
	CapacityGB   float64 `json:"capacity_GB" yaml:"capacity_GB"` // decimal GB
	PCIeGen      int     `json:"pcie_gen" yaml:"pcie_gen"`
	Lanes        int     `json:"lanes" yaml:"lanes"`                         // 4
	ReadGBps     float64 `json:"read_GBps" yaml:"read_GBps"`                 // sequential read, decimal GB/s
	RandReadIOPS float64 `json:"rand_read_4k_IOPS" yaml:"rand_read_4k_IOPS"` // 4 KiB random read IOPS
	PowerW       float64 `json:"power_W,omitempty" yaml:"power_W,omitempty"` // maximum draw; 0 is unknown
	Sources      string  `json:"sources" yaml:"sources"`
}

// DIMMModel is a memory module one can add to a host's free DIMM slots.
type DIMMModel struct {
	Key         string  `json:"key" yaml:"key"` // "ddr4-3200-64gb-rdimm"
	Name        string  `json:"name" yaml:"name"`
	Type        string  `json:"type" yaml:"type"` // "ddr4" or "ddr5": the socket's memory_type must match
	CapacityGiB float64 `json:"capacity_GiB" yaml:"capacity_GiB"`
	PriceUSD    float64 `json:"price_USD" yaml:"price_USD"`
	Sources     string  `json:"sources" yaml:"sources"`
}

// HostCost is what a server costs besides its GPUs and SSDs (Hyperion's TCO
// terms, section VI). ElectricityUSD is the figure TCO uses; PowerKW,
// USDPerKWh and Years say how it was estimated. Hyperion states $17,000 for
// 4 kW at $0.10/kWh over 5 years, which works out to $17,520: the paper
// rounds, and the default keeps the paper's figure so its TCOs reproduce.
type HostCost struct {
	MachineUSD     float64 `json:"machine_USD" yaml:"machine_USD"`         // chassis, CPUs, memory, ...
	ElectricityUSD float64 `json:"electricity_USD" yaml:"electricity_USD"` // over Years
	PowerKW        float64 `json:"power_kW" yaml:"power_kW"`
	USDPerKWh      float64 `json:"USD_per_kWh" yaml:"USD_per_kWh"`
	Years          float64 `json:"years" yaml:"years"`
	MemoryGiB      float64 `json:"memory_GiB" yaml:"memory_GiB"` // host memory the machine price includes
	// BasePowerW is what the host draws besides its GPUs and SSDs (CPUs,
	// memory, fans), PSUW what its power supplies deliver with their
	// redundancy kept; 0 is unknown and the power check is skipped.
	BasePowerW float64 `json:"base_power_W,omitempty" yaml:"base_power_W,omitempty"`
	PSUW       float64 `json:"psu_W,omitempty" yaml:"psu_W,omitempty"`
	Sources    string  `json:"sources" yaml:"sources"`
}

// Catalog holds the parts and costs the TPC model prices plans with.
type Catalog struct {
	SchemaVersion int        `json:"schema_version" yaml:"schema_version"`
	GPUs          []GPUModel `json:"gpus" yaml:"gpus"`
	SSDs          []SSDModel `json:"ssds" yaml:"ssds"`
	// DIMMs are the memory modules a plan may add to free DIMM slots.
	DIMMs []DIMMModel `json:"dimms,omitempty" yaml:"dimms,omitempty"`
	Host  HostCost    `json:"host" yaml:"host"`
}

// TCOUSD is Hyperion's eq. 5 for one machine: the 5-year total cost of
// ownership C_mac + C_gpu x N_gpu + C_ssd x N_ssd + C_ele. Multiply by the
// number of machines for a cluster.
func (h HostCost) TCOUSD(gpuUSD float64, nGPU int, ssdUSD float64, nSSD int) float64 {
	return h.MachineUSD + gpuUSD*float64(nGPU) + ssdUSD*float64(nSSD) + h.ElectricityUSD
}

// electricityUSD is the energy cost of running at powerKW for years,
// around the clock (Hyperion assumes GPU work all the time).
func electricityUSD(powerKW, usdPerKWh, years float64) float64 {
	const hoursPerYear = 24 * 365
	return powerKW * usdPerKWh * hoursPerYear * years
}

// DefaultCatalog returns the built-in catalog, a fresh copy each call so the
// caller may edit it. Prices are Hyperion's (section VI) where the paper
// gives one; the rest are marked as estimates in Sources.
func DefaultCatalog() *Catalog {
	return &Catalog{
		SchemaVersion: CatalogSchemaVersion,
		GPUs:          defaultGPUs(),
		SSDs:          defaultSSDs(),
		DIMMs:         defaultDIMMs(),
		Host:          defaultHost(),
	}
}

func defaultGPUs() []GPUModel {
	return append([]GPUModel{
		{
			Key: ModelA100_40GBPCIe, Name: "NVIDIA A100 40GB PCIe", Arch: "sm80",
			PriceUSD: 14177, MemoryGiB: 40, PCIeGen: 4, Lanes: 16, DoubleWidth: true, PowerW: 250,
			FP32TFLOPS: 19.5, TF32TFLOPS: 156, MemGBps: 1555,
			Sources: "power: A100 PCIe 40GB datasheet, 250 W. price: derived, not quoted: Moment (SC'25, section 4) gives a 5-year TCO of $90,270 for its machines A/B " +
				"(4 x A100 40GB PCIe + 8 x P5510) by Hyperion's TCO method (eq. 5); 14,098 + 17,000 + 8 x 308 + 4 x C_gpu = 90,270 " +
				"gives C_gpu = $14,177, the price Hyperion quotes for the 80GB card. " +
				"rates: NVIDIA A100 datasheet: 19.5 TFLOPS FP32, 156 TFLOPS TF32 tensor dense (312 with sparsity), " +
				"40GB HBM2 at 1,555 GB/s; PCIe 4.0 x16, dual-slot card",
		},
		{
			Key: ModelA100_80GBPCIe, Name: "NVIDIA A100 80GB PCIe", Arch: "sm80",
			PriceUSD: 14177, MemoryGiB: 80, PCIeGen: 4, Lanes: 16, DoubleWidth: true, PowerW: 300,
			FP32TFLOPS: 19.5, TF32TFLOPS: 156, MemGBps: 1935,
			Sources: "power: A100 PCIe 80GB datasheet, 300 W. price: Hyperion (ICDE'25) section VI and Table I, $14,177 from an Amazon listing (its ref. [4], 2024). " +
				"rates: NVIDIA A100 datasheet: 19.5 TFLOPS FP32, 156 TFLOPS TF32 tensor dense (312 with sparsity), " +
				"80GB HBM2e at 1,935 GB/s (PCIe card; the SXM4 card has 2,039 GB/s); PCIe 4.0 x16, dual-slot card",
		},
		{
			Key: "h800-80gb-pcie", Name: "NVIDIA H800 80GB PCIe",
			PriceUSD: 44000, MemoryGiB: 80, PCIeGen: 5, Lanes: 16, DoubleWidth: true, PowerW: 350,
			FP32TFLOPS: 51, TF32TFLOPS: 378, MemGBps: 2000,
			Sources: "power: taken as the H100 PCIe's 350 W. price: Hyperion (ICDE'25) section VI and Table I (machine B), $44,000 from Amazon. " +
				"rates: estimate: taken equal to the H100 PCIe datasheet (51 TFLOPS FP32, 378 TFLOPS TF32 tensor dense, " +
				"756 with sparsity, 80GB HBM2e at 2,000 GB/s): the H800 is the same GH100 part with NVLink (400 GB/s) " +
				"and FP64 cut for export rules; not checked against an H800 datasheet. " +
				"PCIe 5.0 x16 (Hyperion Table I, machine B), dual-slot card",
		},
		{
			Key: "h100-80gb-pcie", Name: "NVIDIA H100 80GB PCIe", Arch: "sm90",
			PriceUSD: 30000, MemoryGiB: 80, PCIeGen: 5, Lanes: 16, DoubleWidth: true, PowerW: 350,
			FP32TFLOPS: 51, TF32TFLOPS: 378, MemGBps: 2000,
			Sources: "power: H100 PCIe datasheet, 350 W. price: estimate: not in the papers and NVIDIA publishes no list price; street prices reported in " +
				"2023 ran about $25,000-$40,000 per card (press reports), and $30,000 is a round figure in that range. " +
				"rates: NVIDIA H100 PCIe datasheet and product brief PB-11133: 51 TFLOPS FP32, 756 TFLOPS TF32 tensor " +
				"with sparsity (378 dense), 80GB HBM2e at 2,000 GB/s; PCIe 5.0 x16, dual-slot 10.5-inch card",
		},
		{
			Key: "l40s-48gb-pcie", Name: "NVIDIA L40S 48GB PCIe", Arch: "sm89",
			PriceUSD: 8000, MemoryGiB: 48, PCIeGen: 4, Lanes: 16, DoubleWidth: true, PowerW: 350,
			FP32TFLOPS: 91.6, TF32TFLOPS: 183, MemGBps: 864,
			Sources: "power: L40S datasheet, 350 W. price: estimate: not in the papers and NVIDIA publishes no list price; reseller snapshots put the " +
				"card at about $7,000-$10,000 (2024-2025), and $8,000 is a round figure in that range. " +
				"rates: NVIDIA L40S datasheet: 91.6 TFLOPS FP32, 183 TFLOPS TF32 tensor dense (366 with sparsity), " +
				"48GB GDDR6 at 864 GB/s; PCIe 4.0 x16, dual-slot card, no NVLink",
		},
	}, installedGPUs()...)
}

// installedGPUs are the models servers one already has hold, for a
// review as installed: SXM modules on HGX/DGX boards, AMD Instinct cards
// and cards no longer sold. None is recommended to buy (InstalledOnly);
// their prices, only for the TCO of a machine as it stands, are
// estimates.
func installedGPUs() []GPUModel {
	return []GPUModel{
		{
			Key: "a100-40gb-sxm4", Name: "NVIDIA A100 SXM4 40GB", Arch: "sm80", InstalledOnly: true,
			PriceUSD: 12000, MemoryGiB: 40, PCIeGen: 4, Lanes: 16, PowerW: 400,
			FP32TFLOPS: 19.5, TF32TFLOPS: 156, MemGBps: 1555,
			Sources: "power: A100 SXM4 datasheet, 400 W. price: estimate: sold only on HGX A100 boards; 8-GPU boards were reported at about $80,000-$120,000 " +
				"(2021-2023), and $12,000 a module is a round figure in that range. " +
				"rates: NVIDIA A100 datasheet: 19.5 TFLOPS FP32, 156 TFLOPS TF32 tensor dense, 40GB HBM2 at 1,555 GB/s; " +
				"host link PCIe 4.0 x16, NVLink 600 GB/s",
		},
		{
			Key: "a100-80gb-sxm4", Name: "NVIDIA A100 SXM4 80GB", Arch: "sm80", InstalledOnly: true,
			PriceUSD: 15000, MemoryGiB: 80, PCIeGen: 4, Lanes: 16, PowerW: 400,
			FP32TFLOPS: 19.5, TF32TFLOPS: 156, MemGBps: 2039,
			Sources: "power: A100 SXM4 datasheet, 400 W. price: estimate: sold only on HGX A100 boards, about $15,000 a module in 2023 reports. " +
				"rates: NVIDIA A100 datasheet: 19.5 TFLOPS FP32, 156 TFLOPS TF32 tensor dense, 80GB HBM2e at 2,039 GB/s; " +
				"host link PCIe 4.0 x16, NVLink 600 GB/s",
		},
		{
			Key: "h100-80gb-sxm5", Name: "NVIDIA H100 SXM5 80GB", Arch: "sm90", InstalledOnly: true,
			PriceUSD: 30000, MemoryGiB: 80, PCIeGen: 5, Lanes: 16, PowerW: 700,
			FP32TFLOPS: 67, TF32TFLOPS: 494.7, MemGBps: 3350,
			Sources: "power: H100 SXM5 datasheet, up to 700 W. price: estimate: sold only on HGX H100 boards; 8-GPU systems were reported at about $250,000-$300,000 " +
				"(2023-2024), and $30,000 a module is a round figure for the GPU's share. " +
				"rates: NVIDIA H100 datasheet (SXM): 67 TFLOPS FP32, 989 TFLOPS TF32 tensor with sparsity (494.7 dense), " +
				"80GB HBM3 at 3.35 TB/s; host link PCIe 5.0 x16, NVLink 900 GB/s",
		},
		{
			Key: "v100-32gb-sxm", Name: "NVIDIA Tesla V100 SXM 32GB", Arch: "sm70", InstalledOnly: true,
			PriceUSD: 9000, MemoryGiB: 32, PCIeGen: 3, Lanes: 16, PowerW: 300,
			FP32TFLOPS: 15.7, TF32TFLOPS: 15.7, MemGBps: 900,
			Sources: "power: V100 SXM2 datasheet, 300 W (the DGX-2H's SXM3 parts 450 W). price: estimate: sold on HGX-1/DGX boards; about $9,000 a module (2018-2019 reports). " +
				"rates: NVIDIA V100 datasheet (SXM2): 15.7 TFLOPS FP32, 32GB HBM2 at 900 GB/s; no TF32 tensor cores, " +
				"so products run at the FP32 rate; the SXM3 parts of a DGX-2H (450 W) clock higher, which this does not model; " +
				"host link PCIe 3.0 x16, NVLink 300 GB/s",
		},
		{
			Key: "mi100-32gb-pcie", Name: "AMD Instinct MI100 32GB", Arch: "gfx908", InstalledOnly: true,
			PriceUSD: 6400, MemoryGiB: 32, PCIeGen: 4, Lanes: 16, DoubleWidth: true, PowerW: 300,
			FP32TFLOPS: 23.1, TF32TFLOPS: 46.1, MemGBps: 1228.8,
			Sources: "power: MI100 datasheet, 300 W. price: AMD's launch price, $6,400 (November 2020 press). installed only: gnnplan's trainer has no ROCm backend. " +
				"rates: AMD Instinct MI100 datasheet: 23.1 TFLOPS FP32 vector, 46.1 TFLOPS FP32 matrix (no TF32: the matrix " +
				"rate stands in for it), 32GB HBM2 at 1.2288 TB/s; PCIe 4.0 x16, dual-slot card",
		},
		{
			Key: "mi50-32gb-pcie", Name: "AMD Instinct MI50 32GB", Arch: "gfx906", InstalledOnly: true,
			PriceUSD: 4000, MemoryGiB: 32, PCIeGen: 4, Lanes: 16, DoubleWidth: true, PowerW: 300,
			FP32TFLOPS: 13.3, TF32TFLOPS: 13.3, MemGBps: 1024,
			Sources: "power: MI50 datasheet, 300 W. price: estimate: about $4,000 (2019-2020 reseller listings). installed only: gnnplan's trainer has no ROCm backend. " +
				"rates: AMD Radeon Instinct MI50 datasheet: 13.3 TFLOPS FP32 (no matrix cores or TF32: products at the FP32 rate), " +
				"32GB HBM2 at 1,024 GB/s; PCIe 4.0 x16, dual-slot card",
		},
		{
			Key: "p100-16gb-pcie", Name: "NVIDIA Tesla P100 PCIe 16GB", Arch: "sm60", InstalledOnly: true,
			PriceUSD: 1500, MemoryGiB: 16, PCIeGen: 3, Lanes: 16, DoubleWidth: true, PowerW: 250,
			FP32TFLOPS: 9.3, TF32TFLOPS: 9.3, MemGBps: 732,
			Sources: "power: P100 PCIe datasheet, 250 W. price: estimate: no longer sold new; used cards list at about $1,000-$2,000 (2024). " +
				"rates: NVIDIA Tesla P100 PCIe datasheet: 9.3 TFLOPS FP32 (no tensor cores: products at the FP32 rate), " +
				"16GB HBM2 at 732 GB/s; PCIe 3.0 x16, dual-slot card",
		},
		{
			Key: "m2070-6gb", Name: "NVIDIA Tesla M2070 6GB", Arch: "sm20", InstalledOnly: true,
			PriceUSD: 100, MemoryGiB: 6, PCIeGen: 2, Lanes: 16, DoubleWidth: true, PowerW: 225,
			FP32TFLOPS: 1.03, TF32TFLOPS: 1.03, MemGBps: 150,
			Sources: "power: M2070 datasheet, 225 W. price: estimate: no longer sold; used modules list for about $100. installed only: CUDA 12, which the " +
				"trainer's backend needs, no longer runs Fermi GPUs. " +
				"rates: NVIDIA Tesla M2050/M2070 datasheet: 1.03 TFLOPS FP32, 6GB GDDR5 at 150 GB/s; PCIe 2.0 x16, dual-slot",
		},
	}
}

func defaultDIMMs() []DIMMModel {
	return []DIMMModel{
		{Key: "ddr4-3200-64gb-rdimm", Name: "64GB DDR4-3200 RDIMM", Type: "ddr4", CapacityGiB: 64, PriceUSD: 180,
			Sources: "price: estimate: server DDR4-3200 64GB RDIMMs listed at about $150-$220 at resellers (2025); $180 is in that range"},
		{Key: "ddr4-3200-128gb-lrdimm", Name: "128GB DDR4-3200 LRDIMM", Type: "ddr4", CapacityGiB: 128, PriceUSD: 450,
			Sources: "price: estimate: 128GB DDR4-3200 LRDIMMs listed at about $350-$550 (2025)"},
		{Key: "ddr5-4800-64gb-rdimm", Name: "64GB DDR5-4800 RDIMM", Type: "ddr5", CapacityGiB: 64, PriceUSD: 300,
			Sources: "price: estimate: server DDR5-4800 64GB RDIMMs listed at about $250-$350 (2025)"},
		{Key: "ddr5-4800-96gb-rdimm", Name: "96GB DDR5-4800 RDIMM", Type: "ddr5", CapacityGiB: 96, PriceUSD: 450,
			Sources: "price: estimate: 96GB DDR5-4800 RDIMMs listed at about $400-$550 (2025)"},
	}
}

// DIMM returns the DIMM model with the given key. An unknown key is a
// *topology.InputError listing the known ones.
func (c *Catalog) DIMM(key string) (DIMMModel, error) {
	if c == nil {
		return lookup[DIMMModel]("DIMM", key, nil, nil)
	}
	return lookup("DIMM", key, c.DIMMs, func(d DIMMModel) string { return d.Key })
}

func defaultSSDs() []SSDModel {
	return []SSDModel{
		{
			Key: ModelP5510_3_84TB, Name: "Intel SSD D7-P5510 3.84TB",
			PriceUSD: 308, CapacityGB: 3840, PCIeGen: 4, Lanes: 4, PowerW: 25,
			ReadGBps: 6.5, RandReadIOPS: 700000,
			Sources: "power: the U.2 form factor's 25 W budget, an upper bound. price: Hyperion (ICDE'25) section VI, $308 from an Amazon listing (its ref. [3], 2024). " +
				"rates: Intel D7-P5510 product specification for the 3.84TB model: PCIe 4.0 x4 U.2, 6,500 MB/s " +
				"sequential read, 700K 4 KiB random read IOPS (the family's 930K is the 7.68TB model)",
		},
		{
			Key: "980pro-1tb", Name: "Samsung 980 PRO 1TB",
			PriceUSD: 100, CapacityGB: 1000, PCIeGen: 4, Lanes: 4, PowerW: 8.25,
			ReadGBps: 7.0, RandReadIOPS: 1000000,
			Sources: "power: the M.2 connector's budget, 3.3 V x 2.5 A = 8.25 W, an upper bound. price: Hyperion (ICDE'25) section VI, $100. " +
				"rates: Samsung 980 PRO datasheet for the 1TB model: PCIe 4.0 x4 M.2, 7,000 MB/s sequential read, " +
				"1,000K 4 KiB random read IOPS at QD32 (a client drive: burst figures, from its SLC cache)",
		},
		{
			Key: "pm1743-3.84tb", Name: "Samsung PM1743 3.84TB",
			PriceUSD: 800, CapacityGB: 3840, PCIeGen: 5, Lanes: 4, PowerW: 25,
			ReadGBps: 13.0, RandReadIOPS: 2500000,
			Sources: "power: the U.2/E3.S form factor's 25 W budget, an upper bound. price: estimate: not in the papers; about $0.21 per GB, the range reseller listings for PCIe 5.0 " +
				"enterprise TLC drives showed in 2024, not a quote. " +
				"rates: estimate for this capacity: Samsung's PM1743 announcement (Dec 2021) gives up to 13,000 MB/s " +
				"sequential read and 2,500K 4 KiB random read IOPS for the family (quoted for the 15.36TB model); the " +
				"3.84TB model is assumed to match, not checked against its datasheet (smaller models often have fewer " +
				"IOPS). PCIe 5.0 x4, U.2 or E3.S",
		},
	}
}

func defaultHost() HostCost {
	return HostCost{
		MachineUSD: 14098, ElectricityUSD: 17000,
		PowerKW: 4, USDPerKWh: 0.10, Years: 5, MemoryGiB: 768, BasePowerW: 700, PSUW: 4000,
		Sources: "machine: Hyperion (ICDE'25) section VI, $14,098, the price of machine A from its provider (ref. [71], " +
			"a Supermicro 4U GPU SuperServer store page; that page's model is an AMD EPYC server while machine A has " +
			"2 x Xeon Gold 5320, so read it as an estimate for a 4U GPU server). " +
			"electricity: Hyperion section VI: 4,000 W around the clock at $0.10/kWh over the 5-year life, " +
			"\"$17,000 in total\"; 4 kW x 8,760 h x 5 x $0.10 = $17,520, so the paper rounds down; kept at $17,000 " +
			"so Hyperion's TCOs ($48,971, $78,794, $45,275) and Moment's ($90,270) reproduce. " +
			"memory: Hyperion Table I, machine A has 768 GB (DIMM sizes are binary: 768 GiB). " +
			"base power: estimate: 2 x Xeon Gold 5320 at 185 W TDP, 768 GiB of DIMMs at about 4 W each and fans and board, " +
			"about 700 W. psu: estimate: Supermicro's 4U 4-GPU SuperServers carry four 2,000 W supplies in a 2+2 " +
			"redundant pair, 4,000 W with redundancy kept",
	}
}

// GPU returns the GPU model with the given key. An unknown key is a
// *topology.InputError listing the known ones.
func (c *Catalog) GPU(key string) (GPUModel, error) {
	if c == nil {
		return lookup[GPUModel]("GPU", key, nil, nil)
	}
	return lookup("GPU", key, c.GPUs, func(g GPUModel) string { return g.Key })
}

// SSD returns the SSD model with the given key. An unknown key is a
// *topology.InputError listing the known ones.
func (c *Catalog) SSD(key string) (SSDModel, error) {
	if c == nil {
		return lookup[SSDModel]("SSD", key, nil, nil)
	}
	return lookup("SSD", key, c.SSDs, func(m SSDModel) string { return m.Key })
}

// lookup finds the entry of items whose key is key (normalizeKey), or
// returns unknownKey's error naming kind and the keys there are.
func lookup[T any](kind, key string, items []T, keyOf func(T) string) (T, error) {
	want := normalizeKey(key)
	known := make([]string, 0, len(items))
	for _, it := range items {
		if keyOf(it) == want {
			return it, nil
		}
		known = append(known, keyOf(it))
	}
	var zero T
	return zero, unknownKey(kind, key, known)
}

// normalizeKey lets "A100-80GB-PCIe " find "a100-80gb-pcie": keys are
// lower case by validation, and people type model names as vendors write them.
func normalizeKey(key string) string { return strings.ToLower(strings.TrimSpace(key)) }

func unknownKey(kind, key string, known []string) error {
	sort.Strings(known)
	list := strings.Join(known, ", ")
	if list == "" {
		list = "none"
	}
	return &topology.InputError{Msg: fmt.Sprintf("unknown %s model %q (known: %s)", kind, key, list)}
}

// Validate checks the catalog as the TPC model needs it: the schema version,
// every entry complete and with positive figures, keys unique, host costs
// sane. Errors are *topology.InputError naming the entry and field; they
// carry no path (ParseCatalog adds the file's).
func (c *Catalog) Validate() error {
	if p := c.problem(); p != nil {
		return p.err
	}
	return nil
}

// problem is the first thing wrong with a catalog, with where it is (list
// and index, -1 for the list itself) so a parser can find its line.
type problem struct {
	list  string
	index int
	err   *topology.InputError
}

func (c *Catalog) problem() *problem {
	if c == nil {
		return &problem{index: -1, err: &topology.InputError{Msg: "no catalog"}}
	}
	if c.SchemaVersion != CatalogSchemaVersion {
		return &problem{list: "schema_version", index: -1, err: &topology.InputError{Field: "schema_version",
			Msg: fmt.Sprintf("%d is not supported (this gnnplan reads version %d)", c.SchemaVersion, CatalogSchemaVersion)}}
	}
	if len(c.GPUs) == 0 {
		return &problem{list: "gpus", index: -1, err: &topology.InputError{Field: "gpus", Msg: "empty: the TPC model needs at least one GPU to price"}}
	}
	if p := entriesProblem(c.GPUs, c.SSDs); p != nil {
		return p
	}
	seen := map[string]int{}
	for i, d := range c.DIMMs {
		if p := entryProblem("dimms", i, d.Key, seen, dimmChecks(d)); p != nil {
			return p
		}
	}
	h := c.Host
	return hostProblem(hostFields{&h.MachineUSD, &h.ElectricityUSD, &h.PowerKW, &h.USDPerKWh, &h.Years, &h.MemoryGiB, &h.BasePowerW, &h.PSUW}, true)
}

// entriesProblem checks GPU and SSD entries and their keys' uniqueness.
func entriesProblem(gpus []GPUModel, ssds []SSDModel) *problem {
	seen := map[string]int{}
	for i, g := range gpus {
		if p := entryProblem("gpus", i, g.Key, seen, gpuChecks(g)); p != nil {
			return p
		}
	}
	seen = map[string]int{}
	for i, s := range ssds {
		if p := entryProblem("ssds", i, s.Key, seen, ssdChecks(s)); p != nil {
			return p
		}
	}
	return nil
}

// check is one field's rule: ok reports whether the value is valid; msg
// says, when it is not, what is wrong and what would be valid.
type check struct {
	field string
	ok    bool
	msg   string
}

func positive(field string, v float64) check {
	return check{field, v > 0 && !math.IsInf(v, 0), "missing or not > 0"}
}

func lanesCheck(v int) check {
	return check{"lanes", v >= 1 && v <= 32, fmt.Sprintf("%d is not a PCIe link width (want 1-32, e.g. 16 for a GPU, 4 for an NVMe SSD)", v)}
}

func genCheck(v int) check {
	return check{"pcie_gen", v >= 1 && v <= 7, fmt.Sprintf("%d is not a PCIe generation (want 1-7)", v)}
}

func gpuChecks(g GPUModel) []check {
	return []check{
		positive("price_USD", g.PriceUSD),
		positive("memory_GiB", g.MemoryGiB),
		genCheck(g.PCIeGen),
		lanesCheck(g.Lanes),
		positive("fp32_TFLOPS", g.FP32TFLOPS),
		{"tf32_TFLOPS", g.TF32TFLOPS > 0 && !math.IsInf(g.TF32TFLOPS, 0), "missing or not > 0 (a GPU without TF32 tensor cores: give its FP32 rate)"},
		positive("mem_GBps", g.MemGBps),
		{"power_W", g.PowerW >= 0 && !math.IsInf(g.PowerW, 0), "negative or not finite (0 or left out: unknown)"},
	}
}

func dimmChecks(d DIMMModel) []check {
	return []check{
		{"type", d.Type == "ddr4" || d.Type == "ddr5", fmt.Sprintf("%q (valid: ddr4, ddr5)", d.Type)},
		positive("capacity_GiB", d.CapacityGiB),
		positive("price_USD", d.PriceUSD),
	}
}

func ssdChecks(s SSDModel) []check {
	return []check{
		positive("price_USD", s.PriceUSD),
		positive("capacity_GB", s.CapacityGB),
		genCheck(s.PCIeGen),
		lanesCheck(s.Lanes),
		positive("read_GBps", s.ReadGBps),
		positive("rand_read_4k_IOPS", s.RandReadIOPS),
		{"power_W", s.PowerW >= 0 && !math.IsInf(s.PowerW, 0), "negative or not finite (0 or left out: unknown)"},
	}
}

func entryProblem(list string, i int, key string, seen map[string]int, checks []check) *problem {
	at := fmt.Sprintf("%s[%d]", list, i)
	fail := func(msg string) *problem {
		return &problem{list: list, index: i, err: &topology.InputError{Field: at, Msg: msg}}
	}
	if key == "" {
		return fail("key missing (every entry needs a key, e.g. \"a100-80gb-pcie\")")
	}
	if !validKey(key) {
		return fail(fmt.Sprintf("key %q: use lower-case letters, digits and . _ - (e.g. %q)", key, suggestKey(key)))
	}
	at = fmt.Sprintf("%s[%d] (%s)", list, i, key)
	if j, dup := seen[key]; dup {
		return fail(fmt.Sprintf("key repeats %s[%d] (each key may appear once)", list, j))
	}
	seen[key] = i
	for _, c := range checks {
		if !c.ok {
			return fail(c.field + " " + c.msg)
		}
	}
	return nil
}

// validKey keeps keys easy to type on a command line and stable in plan
// files: lower-case letters and digits, with . _ - as separators.
func validKey(key string) bool {
	for i, r := range key {
		sep := r == '.' || r == '_' || r == '-'
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || sep && i > 0) {
			return false
		}
	}
	return key != ""
}

// suggestKey turns what someone typed ("A100 80GB") into a valid key.
func suggestKey(key string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(key)) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	s := strings.TrimLeft(b.String(), "._-")
	if s == "" {
		return "my-part"
	}
	return s
}

// hostFields are the host's numeric fields, nil where a file leaves them
// out.
type hostFields struct {
	machineUSD, electricityUSD, powerKW, usdPerKWh, years, memoryGiB, basePowerW, psuW *float64
}

// hostProblem checks the host fields that are given; complete also
// requires the ones every TCO needs.
func hostProblem(h hostFields, complete bool) *problem {
	rules := []struct {
		field    string
		v        *float64
		zeroOK   bool // free electricity, a machine already paid for: 0 is a choice
		required bool
	}{
		{"machine_USD", h.machineUSD, true, true},
		{"electricity_USD", h.electricityUSD, true, true},
		{"power_kW", h.powerKW, true, false},
		{"USD_per_kWh", h.usdPerKWh, true, false},
		{"years", h.years, false, true},
		{"memory_GiB", h.memoryGiB, false, true},
		{"base_power_W", h.basePowerW, true, false},
		{"psu_W", h.psuW, true, false},
	}
	for _, r := range rules {
		msg := ""
		switch {
		case r.v == nil:
			if complete && r.required {
				msg = "missing"
			}
		case math.IsNaN(*r.v) || math.IsInf(*r.v, 0):
			msg = "is not a finite number"
		case r.zeroOK && *r.v < 0:
			msg = "is negative"
		case !r.zeroOK && *r.v <= 0:
			msg = "missing or not > 0"
		}
		if msg != "" {
			return &problem{list: "host", index: -1, err: &topology.InputError{Field: "host", Msg: r.field + " " + msg}}
		}
	}
	return nil
}

// maxCatalogBytes bounds what LoadCatalog reads: a catalog is a few
// kilobytes, and a wrong path (a device, a dataset) must not be slurped.
const maxCatalogBytes = 16 << 20

// LoadCatalog reads a catalog file (JSON or YAML) and merges it over
// DefaultCatalog, as ParseCatalog does.
func LoadCatalog(path string) (*Catalog, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &topology.InputError{Path: path, Msg: "cannot read catalog file", Err: err}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxCatalogBytes+1))
	if err != nil {
		return nil, &topology.InputError{Path: path, Msg: "cannot read catalog file", Err: err}
	}
	if len(data) > maxCatalogBytes {
		return nil, &topology.InputError{Path: path, Msg: fmt.Sprintf("larger than %d MiB: not a catalog file", maxCatalogBytes>>20)}
	}
	return ParseCatalog(path, data)
}

// catalogFile is a catalog as a file gives it: every part optional, host
// fields as pointers so "left out" and "set to 0" differ.
type catalogFile struct {
	SchemaVersion *int        `json:"schema_version" yaml:"schema_version"`
	GPUs          []GPUModel  `json:"gpus" yaml:"gpus"`
	SSDs          []SSDModel  `json:"ssds" yaml:"ssds"`
	DIMMs         []DIMMModel `json:"dimms" yaml:"dimms"`
	Host          *hostFile   `json:"host" yaml:"host"`
}

type hostFile struct {
	MachineUSD     *float64 `json:"machine_USD" yaml:"machine_USD"`
	ElectricityUSD *float64 `json:"electricity_USD" yaml:"electricity_USD"`
	PowerKW        *float64 `json:"power_kW" yaml:"power_kW"`
	USDPerKWh      *float64 `json:"USD_per_kWh" yaml:"USD_per_kWh"`
	Years          *float64 `json:"years" yaml:"years"`
	MemoryGiB      *float64 `json:"memory_GiB" yaml:"memory_GiB"`
	BasePowerW     *float64 `json:"base_power_W" yaml:"base_power_W"`
	PSUW           *float64 `json:"psu_W" yaml:"psu_W"`
	Sources        *string  `json:"sources" yaml:"sources"`
}

type format int

const (
	formatJSON format = iota
	formatYAML
)

// ParseCatalog decodes a catalog file's contents and merges them over
// DefaultCatalog: an entry whose key is already known overrides the fields
// it gives and keeps the built-in entry's others (a price alone is a
// complete override), new keys are added after the built-in ones and must
// be complete, and
// a host block replaces the host fields it sets. When the block sets
// power_kW, USD_per_kWh or years but not electricity_USD, electricity is
// recomputed from them (around the clock), so changing the power or the
// tariff is not silently ignored.
//
// The format is YAML for .yaml/.yml, JSON for .json, otherwise JSON when
// the text starts with '{'. Unknown fields are refused (a misspelt
// "price_usd" must not leave a price at 0). Errors are *topology.InputError
// naming path and, where known, the line.
func ParseCatalog(path string, data []byte) (*Catalog, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // a BOM some editors write
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, &topology.InputError{Path: path, Msg: fmt.Sprintf("empty catalog file (want schema_version: %d and gpus, ssds or host to add or override)", CatalogSchemaVersion)}
	}
	fm := detectFormat(path, data)
	var f catalogFile
	var err error
	if fm == formatJSON {
		err = decodeJSON(path, data, &f)
	} else {
		err = decodeYAML(path, data, &f)
	}
	if err != nil {
		return nil, err
	}
	if f.SchemaVersion == nil {
		return nil, &topology.InputError{Path: path, Field: "schema_version",
			Msg: fmt.Sprintf("missing: this is not a gnnplan catalog file (want schema_version: %d at the top)", CatalogSchemaVersion)}
	}
	if *f.SchemaVersion != CatalogSchemaVersion {
		return nil, &topology.InputError{Path: path, Line: entryLine(fm, data, "schema_version", -1), Field: "schema_version",
			Msg: fmt.Sprintf("%d is not supported (this gnnplan reads version %d)", *f.SchemaVersion, CatalogSchemaVersion)}
	}
	if err := fillFromBuiltIn(fm, data, &f); err != nil {
		return nil, &topology.InputError{Path: path, Msg: "cannot read the entries' fields", Err: err}
	}
	p := entriesProblem(f.GPUs, f.SSDs)
	if p == nil && f.Host != nil {
		h := f.Host
		p = hostProblem(hostFields{h.MachineUSD, h.ElectricityUSD, h.PowerKW, h.USDPerKWh, h.Years, h.MemoryGiB, h.BasePowerW, h.PSUW}, false)
	}
	if p != nil {
		e := *p.err
		e.Path, e.Line = path, entryLine(fm, data, p.list, p.index)
		return nil, &e
	}
	c := DefaultCatalog()
	c.merge(&f)
	if p := c.problem(); p != nil {
		// Every part of the file passed on its own, so this is a merge
		// that left something inconsistent; still the user's file to fix.
		e := *p.err
		e.Path = path
		return nil, &e
	}
	return c, nil
}

func detectFormat(path string, data []byte) format {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".json":
		return formatJSON
	case ".yaml", ".yml":
		return formatYAML
	}
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '{' {
		return formatJSON
	}
	return formatYAML
}

// fillFromBuiltIn completes each file entry whose key the built-in catalog
// has: the fields the file leaves out take the built-in entry's values.
// Which fields the file gives is read from the file itself, as a map per
// entry, since a decoded struct cannot tell a 0 from a field left out.
func fillFromBuiltIn(fm format, data []byte, f *catalogFile) error {
	var raw struct {
		GPUs []map[string]any `json:"gpus" yaml:"gpus"`
		SSDs []map[string]any `json:"ssds" yaml:"ssds"`
	}
	var err error
	if fm == formatJSON {
		err = json.Unmarshal(data, &raw)
	} else {
		err = yaml.Unmarshal(data, &raw)
	}
	if err != nil {
		return err
	}
	builtIn := DefaultCatalog()
	if err := fillEntries(builtIn.GPUs, f.GPUs, raw.GPUs, func(g GPUModel) string { return g.Key }); err != nil {
		return err
	}
	return fillEntries(builtIn.SSDs, f.SSDs, raw.SSDs, func(s SSDModel) string { return s.Key })
}

// fillEntries overlays each file entry whose key a built-in entry has
// (the fields raw says the file gives) on that built-in entry.
func fillEntries[T any](builtIn, file []T, raw []map[string]any, key func(T) string) error {
	for i := range file {
		j := slices.IndexFunc(builtIn, func(x T) bool { return key(x) == key(file[i]) })
		if j < 0 || i >= len(raw) {
			continue
		}
		if err := overlay(builtIn[j], raw[i], &file[i]); err != nil {
			return err
		}
	}
	return nil
}

// overlay writes base with the given fields over it into dst (both JSON
// encodings use the catalog's field names, as the YAML ones do).
func overlay[T any](base T, given map[string]any, dst *T) error {
	b, err := json.Marshal(base)
	if err != nil {
		return err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	for k, v := range given {
		m[k] = v
	}
	if b, err = json.Marshal(m); err != nil {
		return err
	}
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		return err
	}
	*dst = out
	return nil
}

// merge applies a decoded, checked file over c.
func (c *Catalog) merge(f *catalogFile) {
	for _, g := range f.GPUs {
		if i := slices.IndexFunc(c.GPUs, func(x GPUModel) bool { return x.Key == g.Key }); i >= 0 {
			c.GPUs[i] = g
		} else {
			c.GPUs = append(c.GPUs, g)
		}
	}
	for _, s := range f.SSDs {
		if i := slices.IndexFunc(c.SSDs, func(x SSDModel) bool { return x.Key == s.Key }); i >= 0 {
			c.SSDs[i] = s
		} else {
			c.SSDs = append(c.SSDs, s)
		}
	}
	for _, d := range f.DIMMs {
		if i := slices.IndexFunc(c.DIMMs, func(x DIMMModel) bool { return x.Key == d.Key }); i >= 0 {
			c.DIMMs[i] = d
		} else {
			c.DIMMs = append(c.DIMMs, d)
		}
	}
	if f.Host == nil {
		return
	}
	h, fh := &c.Host, f.Host
	set := func(dst *float64, src *float64) {
		if src != nil {
			*dst = *src
		}
	}
	set(&h.MachineUSD, fh.MachineUSD)
	set(&h.PowerKW, fh.PowerKW)
	set(&h.USDPerKWh, fh.USDPerKWh)
	set(&h.Years, fh.Years)
	set(&h.MemoryGiB, fh.MemoryGiB)
	set(&h.BasePowerW, fh.BasePowerW)
	set(&h.PSUW, fh.PSUW)
	if fh.ElectricityUSD != nil {
		h.ElectricityUSD = *fh.ElectricityUSD
	} else if fh.PowerKW != nil || fh.USDPerKWh != nil || fh.Years != nil {
		h.ElectricityUSD = electricityUSD(h.PowerKW, h.USDPerKWh, h.Years)
	}
	if fh.Sources != nil {
		h.Sources = *fh.Sources
	}
}

// decodeJSON decodes strictly: unknown fields and trailing data are errors.
func decodeJSON(path string, data []byte, f *catalogFile) error {
	// Read the version first, leniently: a newer file's new fields should
	// be reported as a version mismatch, not as unknown fields.
	var probe struct {
		SchemaVersion *int `json:"schema_version"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return jsonError(path, data, err)
	}
	if probe.SchemaVersion != nil && *probe.SchemaVersion != CatalogSchemaVersion {
		f.SchemaVersion = probe.SchemaVersion
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(f); err != nil {
		return jsonError(path, data, err)
	}
	if dec.More() {
		off := skipSeparators(data, dec.InputOffset())
		return &topology.InputError{Path: path, Line: lineOf(data, off), Msg: "more than one JSON value (a catalog file is one object)"}
	}
	return nil
}

// jsonError turns a decoding error into an InputError with a line.
func jsonError(path string, data []byte, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn) && syn.Offset >= int64(len(data)):
		return &topology.InputError{Path: path, Line: lineOf(data, syn.Offset), Msg: "truncated JSON (the document ends early)"}
	case errors.As(err, &syn):
		return &topology.InputError{Path: path, Line: lineOf(data, syn.Offset), Msg: "malformed JSON: " + syn.Error()}
	case errors.As(err, &typ):
		what := "a " + goTypeWord(typ.Type.String())
		if typ.Field == "" {
			return &topology.InputError{Path: path, Line: lineOf(data, typ.Offset),
				Msg: fmt.Sprintf("has a JSON %s where a catalog object is expected", typ.Value)}
		}
		return &topology.InputError{Path: path, Line: lineOf(data, typ.Offset), Field: typ.Field,
			Msg: fmt.Sprintf("has a JSON %s where %s is expected", typ.Value, what)}
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return &topology.InputError{Path: path, Line: lineOf(data, int64(len(data))), Msg: "truncated JSON (the document ends early)"}
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name, _ := strconv.Unquote(strings.TrimPrefix(err.Error(), "json: unknown field "))
		line := 0
		if i := bytes.Index(data, []byte(strconv.Quote(name))); i >= 0 {
			line = lineOf(data, int64(i))
		}
		return &topology.InputError{Path: path, Line: line, Field: name, Msg: unknownFieldMsg}
	}
	return &topology.InputError{Path: path, Msg: "malformed JSON", Err: err}
}

const unknownFieldMsg = "unknown field (check the spelling; keys carry their units: price_USD, memory_GiB, mem_GBps, read_GBps, rand_read_4k_IOPS)"

// goTypeWord names a Go type the way a file's author thinks of it.
func goTypeWord(t string) string {
	t = strings.TrimPrefix(t, "*")
	switch {
	case t == "float64":
		return "number"
	case strings.HasPrefix(t, "int"):
		return "whole number"
	case t == "bool":
		return "boolean"
	case t == "string":
		return "string"
	case strings.HasPrefix(t, "[]"):
		return "list"
	}
	return "mapping"
}

// decodeYAML decodes strictly: unknown fields (KnownFields) and further
// documents are errors.
func decodeYAML(path string, data []byte, f *catalogFile) error {
	var probe struct {
		SchemaVersion *int `yaml:"schema_version"`
	}
	if err := yaml.Unmarshal(data, &probe); err == nil && probe.SchemaVersion != nil && *probe.SchemaVersion != CatalogSchemaVersion {
		f.SchemaVersion = probe.SchemaVersion
		return nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(f); err != nil {
		if errors.Is(err, io.EOF) {
			return &topology.InputError{Path: path, Msg: fmt.Sprintf("no catalog in the file, only comments (want schema_version: %d at the top)", CatalogSchemaVersion)}
		}
		return yamlError(path, err)
	}
	var rest yaml.Node
	if err := dec.Decode(&rest); !errors.Is(err, io.EOF) {
		if err != nil {
			return yamlError(path, err)
		}
		return &topology.InputError{Path: path, Line: rest.Line, Msg: "more than one YAML document (a catalog file is one; remove the second ---)"}
	}
	return nil
}

// yamlError turns a yaml.v3 error into an InputError with the line the
// decoder names, in the file's terms rather than Go's.
func yamlError(path string, err error) error {
	var typ *yaml.TypeError
	msg := err.Error()
	if errors.As(err, &typ) && len(typ.Errors) > 0 {
		msg = typ.Errors[0]
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	line := 0
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if n, tail, ok := strings.Cut(rest, ": "); ok {
			if l, err := strconv.Atoi(n); err == nil {
				line, msg = l, tail
			}
		}
	}
	// yaml.v3 words: "field X not found in type T", "cannot unmarshal !!str `x` into T".
	if rest, ok := strings.CutPrefix(msg, "field "); ok {
		if name, _, ok := strings.Cut(rest, " not found in type "); ok {
			return &topology.InputError{Path: path, Line: line, Field: name, Msg: unknownFieldMsg}
		}
	}
	if rest, ok := strings.CutPrefix(msg, "cannot unmarshal "); ok {
		if i := strings.LastIndex(rest, " into "); i >= 0 {
			value, into := strings.TrimPrefix(rest[:i], "!!"), rest[i+len(" into "):]
			return &topology.InputError{Path: path, Line: line, Msg: fmt.Sprintf("has a YAML %s where a %s is expected", value, goTypeWord(into))}
		}
	}
	if typ == nil {
		msg = "malformed YAML: " + msg
	}
	return &topology.InputError{Path: path, Line: line, Msg: msg}
}

// entryLine finds the line of list[index] (index -1: of the list's key) in
// a file, so a validation error points where to edit. 0 when not found.
func entryLine(fm format, data []byte, list string, index int) int {
	if list == "" {
		return 0
	}
	if fm == formatYAML {
		return yamlEntryLine(data, list, index)
	}
	return jsonEntryLine(data, list, index)
}

func yamlEntryLine(data []byte, list string, index int) int {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return 0
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode {
		return 0
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value != list {
			continue
		}
		v := m.Content[i+1]
		if v.Kind == yaml.AliasNode && v.Alias != nil {
			v = v.Alias
		}
		if index >= 0 && v.Kind == yaml.SequenceNode && index < len(v.Content) {
			return v.Content[index].Line
		}
		return m.Content[i].Line
	}
	return 0
}

// jsonEntryLine walks the top-level object's tokens to the list's key and
// then over index elements; encoding/json gives offsets, not lines, only
// this way.
func jsonEntryLine(data []byte, list string, index int) int {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return 0
	}
	for dec.More() {
		keyOff := skipSeparators(data, dec.InputOffset())
		t, err := dec.Token()
		if err != nil {
			return 0
		}
		if k, _ := t.(string); k != list {
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return 0
			}
			continue
		}
		if index < 0 {
			return lineOf(data, keyOff)
		}
		if t, err := dec.Token(); err != nil || t != json.Delim('[') {
			return lineOf(data, keyOff)
		}
		for i := 0; dec.More(); i++ {
			if i == index {
				return lineOf(data, skipSeparators(data, dec.InputOffset()))
			}
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return 0
			}
		}
		return lineOf(data, keyOff)
	}
	return 0
}

// skipSeparators moves an offset past whitespace, commas and colons, to the
// start of the next JSON token.
func skipSeparators(data []byte, off int64) int64 {
	for off >= 0 && off < int64(len(data)) && strings.IndexByte(" \t\r\n,:", data[off]) >= 0 {
		off++
	}
	return off
}

func lineOf(data []byte, offset int64) int {
	offset = min(max(offset, 0), int64(len(data)))
	return bytes.Count(data[:offset], []byte("\n")) + 1
}
