package topology

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gnnplan/gnnplan/topology/internal/sysfstest"
)

// smbiosTestMem describes one type 17 structure for smbiosEncodeMemDevice.
// length is the formatted area with its header, as firmware written
// against each DSP0134 version fills it: 0x15 (2.1), 0x1B (2.3), 0x22
// (2.7), 0x28 (2.8), 0x54 (3.2), 0x5C (3.3).
type smbiosTestMem struct {
	length        int
	handle, array uint16
	size          uint16
	extSize       uint32
	form, typ     byte
	detail        uint16
	speed         uint16
	extSpeed      uint32
	locator, bank string // "" is string number 0
	locIndex      byte   // when set, the locator's string number (to make it bad)
}

func smbiosEncodeMemDevice(m smbiosTestMem) []byte {
	f := make([]byte, m.length-4)
	at := func(off int) []byte { return f[off-4:] } // offsets as DSP0134 gives them
	binary.LittleEndian.PutUint16(at(0x04), m.array)
	binary.LittleEndian.PutUint16(at(0x06), 0xFFFE) // no error information
	binary.LittleEndian.PutUint16(at(0x08), 72)
	binary.LittleEndian.PutUint16(at(0x0A), 64)
	binary.LittleEndian.PutUint16(at(0x0C), m.size)
	at(0x0E)[0], at(0x12)[0] = m.form, m.typ
	binary.LittleEndian.PutUint16(at(0x13), m.detail)
	var strs []string
	if m.locator != "" {
		strs = append(strs, m.locator)
		at(0x10)[0] = byte(len(strs))
	}
	if m.bank != "" {
		strs = append(strs, m.bank)
		at(0x11)[0] = byte(len(strs))
	}
	if m.locIndex != 0 {
		at(0x10)[0] = m.locIndex
	}
	if m.length >= 0x17 {
		binary.LittleEndian.PutUint16(at(0x15), m.speed)
	}
	if m.length >= 0x20 {
		binary.LittleEndian.PutUint32(at(0x1C), m.extSize)
	}
	if m.length >= 0x5C {
		binary.LittleEndian.PutUint32(at(0x54), m.extSpeed)
	}
	return smbiosEncodeStruct(17, m.handle, f, strs...)
}

// smbiosEncodeMemArray is a type 16 Physical Memory Array of the 2.1
// layout (0x0F bytes) or, with extended, the 2.7 one (0x17).
func smbiosEncodeMemArray(handle uint16, use byte, devices uint16, extended bool) []byte {
	f := []byte{0x03, use, 0x06, 0, 0, 0, 0x10, 0xFE, 0xFF, 0, 0} // board, use, multi-bit ECC, 256 GiB in KiB, no error handle
	binary.LittleEndian.PutUint16(f[9:], devices)
	if extended {
		f = append(f, make([]byte, 8)...)
	}
	return smbiosEncodeStruct(16, handle, f)
}

// smbiosTestMemDevices cover every layout and the size, speed, type and
// form factor codes the decoders must read the same way. All codes are
// ones dmidecode 3.4 knows, so its text agrees field for field.
var smbiosTestMemDevices = []smbiosTestMem{
	{length: 0x5C, handle: 0x1100, array: 0x1000, size: 0x7FFF, extSize: 65536, form: 0x09, typ: 0x22, detail: 0x2080,
		speed: 0xFFFF, extSpeed: 8800, locator: "CPU0_DIMM_A1", bank: "NODE 0"},
	{length: 0x5C, handle: 0x1101, array: 0x1000, size: 0, form: 0x02, typ: 0x02, detail: 0x0004, speed: 4800,
		locator: "CPU0_DIMM_A2", bank: "NODE 0"},
	{length: 0x54, handle: 0x1102, array: 0x1000, size: 16384, form: 0x09, typ: 0x1A, detail: 0x8080, speed: 3200,
		locator: "CPU1_DIMM_A1", bank: "NODE 1"},
	{length: 0x28, handle: 0x1103, array: 0x1000, size: 0xFFFF, form: 0x0D, typ: 0x1E, detail: 0x4080, speed: 0xFFFF,
		locator: "CPU1_DIMM_A2"},
	{length: 0x22, handle: 0x1104, array: 0x1000, size: 0x8000 | 1536, form: 0x05, typ: 0x23, speed: 6400,
		locator: "Soldered", bank: "BANK 2"},
	{length: 0x1B, handle: 0x1105, array: 0x1000, size: 0x7FFF, form: 0x0B, typ: 0x18, speed: 1600,
		locator: "DIMM\x01X\xc3\xa9", bank: "Not Specified"},
	{length: 0x15, handle: 0x1106, array: 0x1000, size: 512, form: 0x30, typ: 0x16, locator: "  OLD1  "},
	{length: 0x54, handle: 0x1107, array: 0x1001, size: 0x7FFF, extSize: 0x200000, form: 0x10, typ: 0x21, locator: "VRAM"},
	{length: 0x5C, handle: 0x1108, array: 0x1000, size: 0x7FFF, extSize: 1536, form: 0x09, typ: 0x50, speed: 0xFFFF,
		locator: "P1-DIMMA1", bank: "P0_Node0_Channel0_Dimm0"},
}

// smbiosTestMemWant is what smbiosTestMemDevices decode to.
var smbiosTestMemWant = []MemoryDevice{
	{Handle: 0x1100, ArrayHandle: 0x1000, ArrayUse: "System Memory", Locator: "CPU0_DIMM_A1", BankLocator: "NODE 0",
		Installed: true, SizeMiB: 65536, Type: "DDR5", Registered: true, SpeedMTs: 8800, FormFactor: "DIMM"},
	{Handle: 0x1101, ArrayHandle: 0x1000, ArrayUse: "System Memory", Locator: "CPU0_DIMM_A2", BankLocator: "NODE 0",
		Type: "Unknown", FormFactor: "Unknown"},
	{Handle: 0x1102, ArrayHandle: 0x1000, ArrayUse: "System Memory", Locator: "CPU1_DIMM_A1", BankLocator: "NODE 1",
		Installed: true, SizeMiB: 16384, Type: "DDR4", Registered: true, SpeedMTs: 3200, FormFactor: "DIMM"},
	{Handle: 0x1103, ArrayHandle: 0x1000, ArrayUse: "System Memory", Locator: "CPU1_DIMM_A2",
		Installed: true, Type: "LPDDR4", FormFactor: "SODIMM"},
	{Handle: 0x1104, ArrayHandle: 0x1000, ArrayUse: "System Memory", Locator: "Soldered", BankLocator: "BANK 2",
		Installed: true, SizeMiB: 2, Type: "LPDDR5", SpeedMTs: 6400, FormFactor: "Chip"},
	{Handle: 0x1105, ArrayHandle: 0x1000, ArrayUse: "System Memory", Locator: "DIMM.X..",
		Installed: true, SizeMiB: 32767, Type: "DDR3", SpeedMTs: 1600, FormFactor: "Row Of Chips"},
	{Handle: 0x1106, ArrayHandle: 0x1000, ArrayUse: "System Memory", Locator: "OLD1",
		Installed: true, SizeMiB: 512, Type: "Unknown", FormFactor: "Unknown"},
	{Handle: 0x1107, ArrayHandle: 0x1001, ArrayUse: "Video Memory", Locator: "VRAM",
		Installed: true, SizeMiB: 2 << 20, Type: "HBM2", FormFactor: "Die"},
	{Handle: 0x1108, ArrayHandle: 0x1000, ArrayUse: "System Memory", Locator: "P1-DIMMA1", BankLocator: "P0_Node0_Channel0_Dimm0",
		Installed: true, SizeMiB: 1536, Type: "Unknown", FormFactor: "DIMM"},
}

// smbiosTestMemTable encodes a whole table: a BIOS structure, the system
// memory array (2.7 layout) before the devices, a slot among them, the
// video memory array (2.1 layout) after them, and the End-of-Table.
func smbiosTestMemTable() []byte {
	var t []byte
	t = append(t, smbiosEncodeStruct(0, 0x0000, []byte{1, 2, 0, 0xF0, 3, 0xFF, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
		"American Megatrends Inc.", "2.0b", "05/02/2017")...)
	t = append(t, smbiosEncodeMemArray(0x1000, 0x03, 8, true)...)
	for i, m := range smbiosTestMemDevices {
		t = append(t, smbiosEncodeMemDevice(m)...)
		if i == 3 {
			t = append(t, smbiosEncodeSlot(smbiosTestTableSlots[0])...)
		}
	}
	t = append(t, smbiosEncodeMemArray(0x1001, 0x04, 1, false)...)
	return append(t, smbiosEncodeEnd(0xFEFF)...)
}

func TestParseSMBIOSMemoryDecodesEveryLayout(t *testing.T) {
	got, err := ParseSMBIOSMemory("DMI", smbiosTestMemTable())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(smbiosTestMemWant) {
		t.Fatalf("got %d devices, want %d", len(got), len(smbiosTestMemWant))
	}
	for i := range got {
		if !reflect.DeepEqual(got[i], smbiosTestMemWant[i]) {
			t.Errorf("device %d:\n got %+v\nwant %+v", i, got[i], smbiosTestMemWant[i])
		}
	}
}

func TestSMBIOSMemoryCodesNewerThanDmidecode34(t *testing.T) {
	for _, tc := range []struct {
		name       string
		form, typ  byte
		wantForm   string
		wantType   string
		wantInSlot bool
	}{
		{"HBM3 (SMBIOS 3.6)", 0x10, 0x24, "Die", "HBM3", false},
		{"CAMM (SMBIOS 3.7)", 0x11, 0x23, "CAMM", "LPDDR5", true},
		{"code past the tables", 0xFF, 0xFF, "Unknown", "Unknown", true},
		{"code 0", 0, 0, "Unknown", "Unknown", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			table := append(smbiosEncodeMemDevice(smbiosTestMem{length: 0x54, size: 1024, form: tc.form, typ: tc.typ}), smbiosEncodeEnd(1)...)
			got, err := ParseSMBIOSMemory("DMI", table)
			if err != nil {
				t.Fatal(err)
			}
			if got[0].FormFactor != tc.wantForm || got[0].Type != tc.wantType || got[0].DIMMSlot() != tc.wantInSlot {
				t.Errorf("got form %q type %q slot %v, want %q %q %v", got[0].FormFactor, got[0].Type, got[0].DIMMSlot(),
					tc.wantForm, tc.wantType, tc.wantInSlot)
			}
		})
	}
}

func TestMemoryDeviceDIMMSlot(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    MemoryDevice
		want bool
	}{
		{"RDIMM in system memory", MemoryDevice{ArrayUse: "System Memory", FormFactor: "DIMM"}, true},
		{"empty slot of unknown form factor", MemoryDevice{ArrayUse: "System Memory", FormFactor: "Unknown"}, true},
		{"SODIMM without an array record", MemoryDevice{FormFactor: "SODIMM"}, true},
		{"soldered LPDDR5", MemoryDevice{ArrayUse: "System Memory", FormFactor: "Row Of Chips", Type: "LPDDR5"}, false},
		{"memory chip", MemoryDevice{FormFactor: "Chip"}, false},
		{"HBM die", MemoryDevice{FormFactor: "Die"}, false},
		{"DIMM of a video array", MemoryDevice{ArrayUse: "Video Memory", FormFactor: "DIMM"}, false},
		{"flash array", MemoryDevice{ArrayUse: "Flash Memory", FormFactor: "DIMM"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.d.DIMMSlot(); got != tc.want {
				t.Errorf("DIMMSlot() = %v, want %v", got, tc.want)
			}
		})
	}
}

// The 3.4 fixture is what dmidecode 3.4 printed for smbiosTestMemTable
// (TestDmidecodeAgreesWithMemoryDecoder): both decoders must agree.
func TestParseDmidecodeMemoryMatchesTableDecoder(t *testing.T) {
	p, b := smbiosFixture(t, "encoded-memory-table-dmidecode-3.4.txt")
	got, err := ParseDmidecodeMemory(p, b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, smbiosTestMemWant) {
		t.Errorf("text and table decoders differ:\ntext  %+v\ntable %+v", got, smbiosTestMemWant)
	}
}

// TestDmidecodeAgreesWithMemoryDecoder feeds smbiosTestMemTable to the
// installed dmidecode and parses what it prints; it writes the output to
// $SMBIOS_WRITE_MEMORY_FIXTURE when set, which is how the 3.4 fixture was
// made.
func TestDmidecodeAgreesWithMemoryDecoder(t *testing.T) {
	out := smbiosRunDmidecode(t, smbiosTestMemTable(), "memory", "SMBIOS_WRITE_MEMORY_FIXTURE")
	got, err := ParseDmidecodeMemory("dmidecode", out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !reflect.DeepEqual(got, smbiosTestMemWant) {
		t.Errorf("dmidecode's text and the table decoder differ:\ntext  %+v\ntable %+v\n%s", got, smbiosTestMemWant, out)
	}
}

// smbiosDumpTable returns the structure table of a `dmidecode --dump-bin`
// file: a 32-bit (_SM_) entry point at offset 0 whose table address is the
// file offset (5.2.1).
func smbiosDumpTable(t testing.TB, dump []byte) []byte {
	t.Helper()
	if len(dump) < 0x20 || !bytes.HasPrefix(dump, []byte("_SM_")) || !bytes.Equal(dump[0x10:0x15], []byte("_DMI_")) {
		t.Fatalf("not a dmidecode dump with a 32-bit entry point")
	}
	n, addr := int(binary.LittleEndian.Uint16(dump[0x16:])), int(binary.LittleEndian.Uint32(dump[0x18:]))
	if addr+n > len(dump) {
		t.Fatalf("table at 0x%X+%d past the dump's %d bytes", addr, n, len(dump))
	}
	return dump[addr : addr+n]
}

// The X9DBL dump and the text dmidecode printed from it (u-root's test
// data, see SOURCES.md) are one machine read both ways.
func TestParseMemoryRealTableAndItsText(t *testing.T) {
	_, dump := smbiosFixture(t, "supermicro-x9dbl-dump.bin")
	fromTable, err := ParseSMBIOSMemory("supermicro-x9dbl-dump.bin", smbiosDumpTable(t, dump))
	if err != nil {
		t.Fatal(err)
	}
	p, text := smbiosFixture(t, "supermicro-x9dbl-dmidecode-3.2-memory.txt")
	fromText, err := ParseDmidecodeMemory(p, text)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromTable, fromText) {
		t.Errorf("table and text differ:\ntable %+v\ntext  %+v", fromTable, fromText)
	}
	// Six registered DDR3 modules at 1333 MT/s: 4, 4 and 16 GB on each CPU.
	want := []struct {
		loc string
		mib int64
	}{{"P1-DIMM1A", 4096}, {"P1-DIMM1B", 4096}, {"P1-DIMM1C", 16384}, {"P2-DIMM1D", 4096}, {"P2-DIMM1E", 4096}, {"P2-DIMM1F", 16384}}
	if len(fromTable) != len(want) {
		t.Fatalf("got %d devices, want 6", len(fromTable))
	}
	for i, w := range want {
		d := fromTable[i]
		if d.Locator != w.loc || d.SizeMiB != w.mib || !d.Installed || d.Type != "DDR3" || !d.Registered || d.SpeedMTs != 1333 || d.ArrayUse != "System Memory" {
			t.Errorf("device %d = %+v, want %s of %d MiB, registered DDR3-1333", i, d, w.loc, w.mib)
		}
	}
}

// The real outputs in testdata/smbios, with the slots and modules counted
// by hand from each file, per CPU as its labels (or arrays) say.
var realMemoryFixtures = []struct {
	name, file string
	sockets    int
	want       []socketDIMMs
	typ        string // machine-wide kind as SMBIOS names it
	how        string // part of the placement rule that must be named
}{
	{"two-socket Xeon Gold 5416S, DDR5 RDIMMs, half the slots empty", "supermicro-x13dei-dmidecode-3.5-memory.txt", 2,
		[]socketDIMMs{{8, 4, "ddr5"}, {8, 4, "ddr5"}}, "DDR5", `"P1-DIMMA1"`},
	{"two-socket EPYC 7742, DDR4 RDIMMs in every second slot", "gigabyte-r182-z90-dmidecode-3.2-memory.txt", 2,
		[]socketDIMMs{{16, 8, "ddr4"}, {16, 8, "ddr4"}}, "DDR4", `"DIMM_P0_A0"`},
	{"two-socket Xeon E5 v4, empty slots labelled NO DIMM, one array per CPU", "supermicro-x10drh-it-dmidecode-3.0-memory.txt", 2,
		[]socketDIMMs{{8, 4, "ddr4"}, {8, 0, "ddr4"}}, "DDR4", "one memory array per socket"},
	{"two-socket Xeon Gold 6126, PROC n DIMM m", "hpe-bl460c-gen10-dmidecode-3.1-memory.txt", 2,
		[]socketDIMMs{{8, 2, "ddr4"}, {8, 2, "ddr4"}}, "DDR4", `"PROC 1 DIMM 1"`},
	{"two-socket Xeon E5-2400, DDR3 (not bought)", "supermicro-x9dbl-dmidecode-3.2-memory.txt", 2,
		[]socketDIMMs{{3, 3, ""}, {3, 3, ""}}, "DDR3", `"P1-DIMM1A"`},
	{"the same Xeon E5 v4 discovered as one socket", "supermicro-x10drh-it-dmidecode-3.0-memory.txt", 1,
		[]socketDIMMs{{16, 4, "ddr4"}}, "DDR4", "one socket"},
}

func TestDIMMSlotsOfRealServers(t *testing.T) {
	for _, tc := range realMemoryFixtures {
		t.Run(tc.name, func(t *testing.T) {
			p, b := smbiosFixture(t, tc.file)
			devs, err := ParseDmidecodeMemory(p, b)
			if err != nil {
				t.Fatal(err)
			}
			var slots []MemoryDevice
			for _, d := range devs {
				if d.DIMMSlot() {
					slots = append(slots, d)
				}
			}
			if len(slots) != len(devs) {
				t.Errorf("%d of %d devices count as DIMM slots, want all", len(slots), len(devs))
			}
			pl := placeDIMMSlots(slots, tc.sockets)
			per, typ := summarizeDIMMs(slots, pl, tc.sockets)
			if !reflect.DeepEqual(per, tc.want) || typ != tc.typ {
				t.Errorf("per socket %+v, type %q; want %+v, %q", per, typ, tc.want, tc.typ)
			}
			if !strings.Contains(pl.how, tc.how) || pl.conflicts != 0 {
				t.Errorf("placed by %q with %d conflicts, want %q and none", pl.how, pl.conflicts, tc.how)
			}
		})
	}
}

func TestPlaceDIMMSlotsByLabels(t *testing.T) {
	// devs makes one slot per "locator|bank locator|array" spec.
	devs := func(specs ...string) []MemoryDevice {
		var out []MemoryDevice
		for i, s := range specs {
			f := strings.Split(s+"||", "|")
			d := MemoryDevice{Handle: i, Locator: f[0], BankLocator: f[1], ArrayHandle: -1}
			if f[2] != "" {
				d.ArrayHandle = int(f[2][0])
			}
			out = append(out, d)
		}
		return out
	}
	for _, tc := range []struct {
		name      string
		slots     []MemoryDevice
		sockets   int
		want      []int
		how       string
		conflicts int
	}{
		{"CPU0/CPU1 are 0-based", devs("CPU0_DIMM_A1", "CPU0_DIMM_B1", "CPU1_DIMM_A1", "CPU1_DIMM_B1"), 2, []int{0, 0, 1, 1}, "CPU0_DIMM_A1", 0},
		{"CPU1/CPU2 are 1-based", devs("CPU1_DIMM_B2", "CPU2_DIMM_B2"), 2, []int{0, 1}, "CPU1", 0},
		{"spaces: CPU1 DIMM A1", devs("CPU1 DIMM A1", "CPU2 DIMM A1"), 2, []int{0, 1}, "", 0},
		{"HPE PROC n DIMM m", devs("PROC 1 DIMM 3", "PROC  2 DIMM 12 "), 2, []int{0, 1}, "PROC 1", 0},
		{"Supermicro P1-DIMMA1, P2_DIMMA1", devs("P1-DIMMA1", "P2_DIMMA1"), 2, []int{0, 1}, "P1-DIMMA1", 0},
		{"Gigabyte DIMM_P0_A0", devs("DIMM_P1_I0", "DIMM_P0_A0"), 2, []int{1, 0}, "DIMM_P1_I0", 0},
		{"AMI bank locator P0_Node0", devs("DIMMA1|P0_Node0_Channel0_Dimm0", "DIMMA1|P1_Node1_Channel0_Dimm0"), 2, []int{0, 1}, "P0_Node0", 0},
		{"AMD bank locator P0 CHANNEL A", devs("DIMM 0|P0 CHANNEL A", "DIMM 0|P1 CHANNEL A"), 2, []int{0, 1}, "P0 CHANNEL A", 0},
		{"Lenovo bank locator CPU 1", devs("DIMM 9|CPU 1", "DIMM 1|CPU 1", "DIMM 25|CPU 2"), 2, []int{0, 0, 1}, "CPU 1", 0},
		{"bank locator path .../CPU 0", devs("DIMM A1|Primary Main Board/CPU 0", "DIMM A1|Primary Main Board/CPU 1"), 2, []int{0, 1}, "", 0},
		{"Intel NODE 1, NODE 2", devs("DIMM_A1|NODE 1", "DIMM_B1|NODE 2"), 2, []int{0, 1}, "NODE 1", 0},
		{"NODE 0-3 on two sockets are memory controllers, CPUn decides",
			devs("CPU1_DIMM_A1|NODE 0", "CPU1_DIMM_C1|NODE 1", "CPU2_DIMM_A1|NODE 2", "CPU2_DIMM_C1|NODE 3"), 2, []int{0, 0, 1, 1}, "CPU1_DIMM_A1", 0},
		{"locator and bank locator disagree: the locator wins",
			devs("CPU1_DIMM_A1|P1_Node1_Channel0_Dimm0", "CPU2_DIMM_A1|P0_Node0_Channel0_Dimm0"), 2, []int{0, 1}, "", 2},
		{"labels for some slots, the rest by bank locator", devs("P1-DIMMA1|P0_Node0", "NO DIMM|P1_Node1_Channel0"), 2, []int{0, 1}, "", 0},
		{"numbers naming more sockets than found are not sockets", devs("CPU1_DIMM_A1", "CPU2_DIMM_A1", "CPU3_DIMM_A1", "CPU4_DIMM_A1"), 2,
			[]int{0, 0, 1, 1}, "even split", 0},
		{"Dell letters", devs("A1", "A2", "A3", "B1"), 2, []int{0, 0, 0, 1}, `"A1"`, 0},
		{"channel letters are not sockets", devs("A1", "B1", "C1", "D1"), 2, []int{0, 0, 1, 1}, "even split", 0},
		{"one array per socket", devs("DIMM 1||a", "DIMM 2||a", "DIMM 3||b", "DIMM 4||b", "DIMM 5||b"), 2, []int{0, 0, 1, 1, 1}, "one memory array per socket", 0},
		{"array of a named slot takes that socket", devs("NO DIMM||a", "NO DIMM||b", "P1_DIMMA1||b"), 2, []int{1, 0, 0}, "and slot labels", 0},
		{"arrays that disagree with labels are not used", devs("P1-DIMMA1||a", "P2-DIMMA1||a", "X||b"), 2, []int{0, 0, 1}, "even split", 0},
		{"nothing to go by: even split in table order", devs("DIMM 1", "DIMM 2", "DIMM 3", "DIMM 4", "DIMM 5", "DIMM 6"), 2,
			[]int{0, 0, 0, 1, 1, 1}, "the slot labels name no socket", 0},
		{"one socket takes all", devs("CPU1_DIMM_A1", "CPU2_DIMM_A1"), 1, []int{0, 0}, "one socket", 0},
		{"four sockets, PROC 1-4", devs("PROC 4 DIMM 1", "PROC 1 DIMM 1", "PROC 3 DIMM 1", "PROC 2 DIMM 1"), 4, []int{3, 0, 2, 1}, "", 0},
		{"a socket number of four digits is no socket", devs("CPU1000_DIMM_A1", "CPU1001_DIMM_A1"), 2, []int{0, 1}, "even split", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := placeDIMMSlots(tc.slots, tc.sockets)
			if !reflect.DeepEqual(p.socket, tc.want) || !strings.Contains(p.how, tc.how) || p.conflicts != tc.conflicts {
				t.Errorf("sockets %v by %q with %d conflicts; want %v by %q with %d", p.socket, p.how, p.conflicts, tc.want, tc.how, tc.conflicts)
			}
		})
	}
}

func TestDIMMLabelSockets(t *testing.T) {
	for _, tc := range []struct {
		name string
		locs []string
		want int
	}{
		{"two CPUs, 1-based", []string{"P1-DIMMA1", "P1-DIMMB1", "P2-DIMMA1"}, 2},
		{"four CPUs, 0-based", []string{"CPU0_DIMM_A1", "CPU1_DIMM_A1", "CPU2_DIMM_A1", "CPU3_DIMM_A1"}, 4},
		{"one CPU", []string{"P1-DIMMA1", "P1-DIMMB1"}, 1},
		{"labels without a socket", []string{"DIMM 0", "DIMM 1"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var slots []MemoryDevice
			for _, l := range tc.locs {
				slots = append(slots, MemoryDevice{Locator: l, ArrayHandle: -1})
			}
			if got := dimmLabelSockets(slots); got != tc.want {
				t.Errorf("dimmLabelSockets = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestSummarizeDIMMsMemoryType(t *testing.T) {
	mod := func(typ string) MemoryDevice { return MemoryDevice{Installed: true, Type: typ} }
	empty := func(typ string) MemoryDevice { return MemoryDevice{Type: typ} }
	for _, tc := range []struct {
		name     string
		slots    []MemoryDevice
		wantType []string
		wantAll  string
	}{
		{"each socket its modules' type", []MemoryDevice{mod("DDR5"), empty("Unknown"), mod("DDR5"), empty("Unknown")}, []string{"ddr5", "ddr5"}, "DDR5"},
		{"a socket without modules takes the machine's", []MemoryDevice{mod("DDR4"), mod("DDR4"), empty("Unknown"), empty("Unknown")}, []string{"ddr4", "ddr4"}, "DDR4"},
		{"no modules: the type empty slots state", []MemoryDevice{empty("DDR4"), empty("DDR4"), empty("DDR4"), empty("Unknown")}, []string{"ddr4", "ddr4"}, "DDR4"},
		{"mixed kinds on a socket", []MemoryDevice{mod("DDR4"), mod("DDR5"), mod("DDR5"), empty("")}, []string{"", "ddr5"}, ""},
		{"DDR3 is not bought", []MemoryDevice{mod("DDR3"), mod("DDR3"), mod("DDR3"), mod("DDR3")}, []string{"", ""}, "DDR3"},
		{"type not reported (old dmidecode: <OUT OF SPEC>)", []MemoryDevice{mod("Unknown"), mod("Unknown"), mod("Unknown"), mod("Unknown")}, []string{"", ""}, ""},
		{"a persistent memory module does not change the DRAM type",
			[]MemoryDevice{mod("DDR4"), mod("Logical non-volatile device"), mod("DDR4"), empty("Unknown")}, []string{"ddr4", "ddr4"}, "DDR4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := dimmPlacement{socket: []int{0, 0, 1, 1}}
			per, all := summarizeDIMMs(tc.slots, p, 2)
			got := []string{per[0].memoryType, per[1].memoryType}
			if !reflect.DeepEqual(got, tc.wantType) || all != tc.wantAll {
				t.Errorf("types %q, machine %q; want %q, %q", got, all, tc.wantType, tc.wantAll)
			}
		})
	}
}

func TestFillSocketDIMMsKeepsValuesAlreadySet(t *testing.T) {
	socks := []*Node{
		{ID: "socket0", Kind: KindSocket},
		{ID: "socket1", Kind: KindSocket, DIMMSlots: 12, DIMMs: 6, MemoryType: "ddr5"},
		{ID: "socket2", Kind: KindSocket, MemoryType: "ddr5"},
	}
	per := []socketDIMMs{{8, 4, "ddr4"}, {8, 2, "ddr4"}, {8, 0, "ddr4"}}
	kept := fillSocketDIMMs(socks, per)
	want := [][3]any{{8, 4, "ddr4"}, {12, 6, "ddr5"}, {8, 0, "ddr5"}}
	for i, s := range socks {
		if got := [3]any{s.DIMMSlots, s.DIMMs, s.MemoryType}; got != want[i] {
			t.Errorf("%s = %v, want %v", s.ID, got, want[i])
		}
	}
	if kept != 2 {
		t.Errorf("kept = %d, want 2", kept)
	}
}

func TestParseSMBIOSMemoryRejectsDamagedTables(t *testing.T) {
	dev := smbiosTestMem{length: 0x28, handle: 0x1100, size: 1024, form: 0x09, typ: 0x1A, locator: "A1"}
	short := smbiosEncodeStruct(17, 0x1100, make([]byte, 0x10), "A1") // 2.0 had no type 17 of 20 bytes
	badLoc := dev
	badLoc.locIndex = 3
	unterminated := smbiosEncodeMemDevice(dev)
	unterminated = unterminated[:len(unterminated)-1]
	for _, tc := range []struct {
		name      string
		table     []byte
		wantField string
		wantMsg   string
	}{
		{"type 17 shorter than SMBIOS 2.1", short, "structure at offset 0x0 (type 17, handle 0x1100)", "length 20, want at least 21"},
		{"locator string past the strings", smbiosEncodeMemDevice(badLoc), "structure at offset 0x0 (type 17, handle 0x1100)", "device locator: string 3 requested, the structure has 1"},
		{"string set not terminated", unterminated, "structure at offset 0x0", "not terminated by two NUL bytes"},
		{"structure runs past the end", smbiosEncodeMemDevice(dev)[:20], "structure at offset 0x0", "runs past the end of the table"},
		{"truncated header after a device", append(smbiosEncodeMemDevice(dev), 17, 0x28), "structure at offset 0x2C", "want a 4-byte structure header"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseSMBIOSMemory("/sys/firmware/dmi/tables/DMI", tc.table)
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("got %+v, %v; want *InputError", got, err)
			}
			if ie.Path != "/sys/firmware/dmi/tables/DMI" || ie.Field != tc.wantField || !strings.Contains(err.Error(), tc.wantMsg) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error = %q (field %q); want one line, field %q, message with %q", err, ie.Field, tc.wantField, tc.wantMsg)
			}
		})
	}
}

// Every prefix of a table is either decoded (up to a structure boundary)
// or refused with an *InputError, never a panic; the same for every prefix
// of a real text cut at any byte.
func TestMemoryParsersOnTruncatedInput(t *testing.T) {
	table := smbiosTestMemTable()
	for n := 0; n <= len(table); n++ {
		devs, err := ParseSMBIOSMemory("DMI", table[:n])
		var ie *InputError
		if err != nil && (!errors.As(err, &ie) || ie.Field == "") {
			t.Fatalf("prefix %d: error %v is not an *InputError with a field", n, err)
		}
		if len(devs) > len(smbiosTestMemWant) {
			t.Fatalf("prefix %d: %d devices", n, len(devs))
		}
	}
	p, text := smbiosFixture(t, "hpe-bl460c-gen10-dmidecode-3.1-memory.txt")
	for n := 0; n <= len(text); n++ {
		devs, err := ParseDmidecodeMemory(p, text[:n])
		var ie *InputError
		if err != nil && (!errors.As(err, &ie) || ie.Line < 1) {
			t.Fatalf("prefix %d: error %v is not an *InputError with a line", n, err)
		}
		if len(devs) > 16 {
			t.Fatalf("prefix %d: %d devices", n, len(devs))
		}
	}
}

func TestParseDmidecodeMemoryRejectsGarbage(t *testing.T) {
	rec := "Handle 0x1100, DMI type 17, 40 bytes\nMemory Device\n\tArray Handle: 0x1000\n"
	for _, tc := range []struct {
		name      string
		text      string
		wantLine  int
		wantField string
		wantMsg   string
	}{
		{"prose", "hello world\n", 1, `"hello world"`, "not dmidecode output"},
		{"binary", "\x00\x01\x02\xff\n", 1, `"\x00\x01\x02\xff"`, "not dmidecode output"},
		{"bad size", rec + "\tSize: 16 GiB\n", 4, "Size", `want a size like "16 GB"`},
		{"size without unit", rec + "\tSize: 16\n", 4, "Size", "want a size"},
		{"size past 31 bits of MiB", rec + "\tSize: 4096 TB\n", 4, "Size", "want a size"},
		{"bad speed", rec + "\tSize: 16 GB\n\tSpeed: fast\n", 5, "Speed", `want a speed like "3200 MT/s"`},
		{"bad array handle", "Memory Device\n\tArray Handle: 1000\n", 2, "Array Handle", "want a handle like 0x003C"},
		{"string dmidecode could not read", rec + "\tSize: 16 GB\n\tLocator: <BAD INDEX>\n", 5, "Locator", "could not read the string"},
		{"record without a Size line", rec + "\tLocator: A1\n", 2, `"Memory Device"`, `no "Size" line`},
		{"record without a Size line before another", rec + "\nHandle 0x1101, DMI type 17, 40 bytes\nMemory Device\n\tSize: 16 GB\n", 2, `"Memory Device"`, `no "Size" line`},
		{"line without a colon", rec + "\tjust words\n", 4, `"just words"`, "Name: value"},
		{"unindented line in a device record", rec + "Stray Title\n", 4, `"Stray Title"`, "unexpected line in a Memory Device record"},
		{"field before the title", "Handle 0x1100, DMI type 17, 40 bytes\n\tSize: 16 GB\n", 2, `"Size: 16 GB"`, `field before "Memory Device"`},
		{"bad Handle line", "Handle 0xZZ, DMI type 17, 40 bytes\n", 1, `"Handle 0xZZ, DMI type 17, 40 bytes"`, "DMI type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseDmidecodeMemory("memory.txt", []byte(tc.text))
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("got %+v, %v; want *InputError", got, err)
			}
			if ie.Path != "memory.txt" || ie.Line != tc.wantLine || ie.Field != tc.wantField || !strings.Contains(err.Error(), tc.wantMsg) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error = %q (line %d, field %q); want line %d, field %q, message with %q", err, ie.Line, ie.Field, tc.wantLine, tc.wantField, tc.wantMsg)
			}
		})
	}
}

func TestParseDmidecodeMemoryEdgeTexts(t *testing.T) {
	dev := func(d MemoryDevice) MemoryDevice {
		if d.Type == "" {
			d.Type = "Unknown"
		}
		if d.FormFactor == "" {
			d.FormFactor = "Unknown"
		}
		return d
	}
	for _, tc := range []struct {
		name string
		text string
		want []MemoryDevice
	}{
		{"no memory devices", "# dmidecode 3.4\nGetting SMBIOS data from sysfs.\nSMBIOS 2.8 present.\n\n", nil},
		{"quiet output has no handles", "Memory Device\n\tSize: 8 GB\n\tForm Factor: SODIMM\n\tLocator: DIMM 0\n\tBank Locator: P0 CHANNEL A\n\tType: DDR5\n\tSpeed: 5600 MT/s\n",
			[]MemoryDevice{dev(MemoryDevice{Handle: -1, ArrayHandle: -1, Installed: true, SizeMiB: 8192, FormFactor: "SODIMM",
				Locator: "DIMM 0", BankLocator: "P0 CHANNEL A", Type: "DDR5", SpeedMTs: 5600})}},
		{"dmidecode 2.x: <OUT OF SPEC> type, MHz with a cycle time",
			"Handle 0x1100, DMI type 17, 34 bytes\nMemory Device\n\tArray Handle: 0x1000\n\tSize: 16384 MB\n\tForm Factor: DIMM\n\tLocator: A1\n\tType: <OUT OF SPEC>\n\tSpeed: 667 MHz (1.5 ns)\n",
			[]MemoryDevice{dev(MemoryDevice{Handle: 0x1100, ArrayHandle: 0x1000, Installed: true, SizeMiB: 16384, FormFactor: "DIMM", Locator: "A1", SpeedMTs: 667})}},
		{"array record after its devices, LRDIMM, kB size",
			"Handle 0x1100, DMI type 17, 92 bytes\nMemory Device\n\tArray Handle: 0x1000\n\tSize: 1536 kB\n\tType Detail: Synchronous LRDIMM\n\tSize: Unknown\n\n" +
				"Handle 0x1000, DMI type 16, 23 bytes\nPhysical Memory Array\n\tLocation: Proprietary Add-on Card\n\tUse: Cache Memory\n\tNumber Of Devices: 1\n",
			[]MemoryDevice{dev(MemoryDevice{Handle: 0x1100, ArrayHandle: 0x1000, ArrayUse: "Cache Memory", Installed: true, Registered: true})}},
		{"a newer dmidecode's names are kept", "Memory Device\n\tSize: 64 GB\n\tForm Factor: CAMM\n\tType: HBM3\n",
			[]MemoryDevice{dev(MemoryDevice{Handle: -1, ArrayHandle: -1, Installed: true, SizeMiB: 65536, FormFactor: "CAMM", Type: "HBM3"})}},
		{"CRLF line ends and records of other types",
			"Handle 0x0004, DMI type 4, 48 bytes\r\nProcessor Information\r\n\tFlags:\r\n\t\tFPU\r\n\r\nHandle 0x1100, DMI type 17, 40 bytes\r\nMemory Device\r\n\tSize: No Module Installed\r\n\tLocator: NO DIMM\r\n",
			[]MemoryDevice{dev(MemoryDevice{Handle: 0x1100, ArrayHandle: -1, Locator: "NO DIMM"})}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseDmidecodeMemory("t", []byte(tc.text))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func FuzzSMBIOSMemoryTable(f *testing.F) {
	f.Add(smbiosTestMemTable())
	for _, m := range smbiosTestMemDevices {
		f.Add(append(smbiosEncodeMemDevice(m), smbiosEncodeEnd(1)...))
	}
	_, dump := smbiosFixture(f, "supermicro-x9dbl-dump.bin")
	f.Add(dump[0x20:])
	f.Fuzz(func(t *testing.T, table []byte) {
		devs, err := ParseSMBIOSMemory("fuzz", table)
		if err != nil {
			var ie *InputError
			if !errors.As(err, &ie) || ie.Path != "fuzz" || ie.Field == "" {
				t.Fatalf("error %v is not an *InputError with path and field", err)
			}
			return
		}
		for _, d := range devs {
			if d.SizeMiB < 0 || d.SpeedMTs < 0 || (!d.Installed && d.SizeMiB != 0) {
				t.Fatalf("impossible device %+v", d)
			}
		}
		p := placeDIMMSlots(devs, 2)
		summarizeDIMMs(devs, p, 2)
	})
}

func FuzzDmidecodeMemory(f *testing.F) {
	for _, tc := range realMemoryFixtures {
		_, b := smbiosFixture(f, tc.file)
		f.Add(b)
	}
	_, b := smbiosFixture(f, "encoded-memory-table-dmidecode-3.4.txt")
	f.Add(b)
	f.Fuzz(func(t *testing.T, text []byte) {
		devs, err := ParseDmidecodeMemory("fuzz", text)
		if err != nil {
			var ie *InputError
			if !errors.As(err, &ie) || ie.Path != "fuzz" || ie.Line < 1 {
				t.Fatalf("error %v is not an *InputError with path and line", err)
			}
			return
		}
		for n := 1; n <= 4; n++ {
			p := placeDIMMSlots(devs, n)
			for _, s := range p.socket {
				if s < 0 || s >= n {
					t.Fatalf("slot placed on socket %d of %d", s, n)
				}
			}
			summarizeDIMMs(devs, p, n)
		}
	})
}

// smbiosServerMemTable is a two-socket DDR5 board as Supermicro's firmware
// describes it: one array, P1-/P2- locators, every second slot empty.
func smbiosServerMemTable() []byte {
	t := smbiosEncodeMemArray(0x1000, 0x03, 16, true)
	for i := 0; i < 16; i++ {
		m := smbiosTestMem{length: 0x5C, handle: uint16(0x1100 + i), array: 0x1000, form: 0x09, typ: 0x22, detail: 0x2080,
			locator: fmt.Sprintf("P%d-DIMM%c1", 1+i/8, 'A'+i%8), bank: fmt.Sprintf("P%d_Node0_Channel%d_Dimm0", i/8, i%8)}
		if i%2 == 0 {
			m.size, m.speed = 0x7FFF, 4800
			m.extSize = 32768
		}
		t = append(t, smbiosEncodeMemDevice(m)...)
	}
	return append(t, smbiosEncodeEnd(0xFEFF)...)
}

func TestDiscoverFillsDIMMSlotsFromSMBIOS(t *testing.T) {
	_, dump := smbiosFixture(t, "supermicro-x9dbl-dump.bin")
	x9dbl := smbiosDumpTable(t, dump)
	damaged := smbiosServerMemTable()
	damaged = append(damaged[:len(damaged)-len(smbiosEncodeEnd(0xFEFF))], 17, 0x5C) // a header cut short
	for _, tc := range []struct {
		name      string
		numa      int
		table     []byte // nil: no DMI file
		before    func(n *Node)
		want      [][3]any // per socket: slots, modules, memory type
		wantNotes []string
		noNotes   []string
	}{
		{name: "DDR5 board from the raw table", numa: 2, table: smbiosServerMemTable(),
			want:      [][3]any{{8, 4, "ddr5"}, {8, 4, "ddr5"}},
			wantNotes: []string{`DIMM slots from the SMBIOS table: socket0 4 of 8 slots hold modules, socket1 4 of 8`, "memory type ddr5", `"P1-DIMMA1"`},
			noNotes:   []string{"DIMM slots unknown", "CPU sockets, discovery found"}},
		{name: "real X9DBL table: DDR3 is not bought", numa: 2, table: x9dbl,
			want:      [][3]any{{3, 3, ""}, {3, 3, ""}},
			wantNotes: []string{"socket0 3 of 3 slots hold modules, socket1 3 of 3", "memory type DDR3, which plans do not buy"}},
		{name: "one socket takes every slot", numa: 1, table: smbiosServerMemTable(),
			want:      [][3]any{{16, 8, "ddr5"}},
			wantNotes: []string{"sockets told apart by one socket", "labels name 2 CPU sockets, discovery found 1"}},
		{name: "no SMBIOS table in the snapshot", numa: 2,
			want:      [][3]any{{0, 0, ""}, {0, 0, ""}},
			wantNotes: []string{"DIMM slots unknown (no SMBIOS table at ", "set them in the machine file"}},
		{name: "damaged table is noted once", numa: 2, table: damaged,
			want:      [][3]any{{0, 0, ""}, {0, 0, ""}},
			wantNotes: []string{"want a 4-byte structure header", "DIMM slots unknown (the SMBIOS table is damaged, as noted)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := sysfstest.FS{NUMANodes: tc.numa, CPUModel: "Intel(R) Xeon(R) Gold 6426Y"}
			root := fs.Write(t)
			if tc.table != nil {
				dmi := filepath.Join(root, "sys", "firmware", "dmi", "tables", "DMI")
				if err := os.MkdirAll(filepath.Dir(dmi), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(dmi, tc.table, 0o400); err != nil {
					t.Fatal(err)
				}
			}
			m := discoverAt(t, root)
			socks := m.NodesOfKind(KindSocket)
			if len(socks) != len(tc.want) {
				t.Fatalf("%d sockets, want %d", len(socks), len(tc.want))
			}
			for i, s := range socks {
				if got := [3]any{s.DIMMSlots, s.DIMMs, s.MemoryType}; got != tc.want[i] {
					t.Errorf("%s slots, modules, type = %v, want %v", s.ID, got, tc.want[i])
				}
			}
			notes := strings.Join(m.Notes, "\n")
			for _, w := range tc.wantNotes {
				if strings.Count(notes, w) != 1 {
					t.Errorf("notes should say %q once:\n%s", w, notes)
				}
			}
			for _, w := range tc.noNotes {
				if strings.Contains(notes, w) {
					t.Errorf("notes should not say %q:\n%s", w, notes)
				}
			}
		})
	}
}

func TestDiscoverNotesUnreadableSMBIOSTable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads any file: the permission check cannot fail")
	}
	root := sysfstest.FS{NUMANodes: 2, CPUModel: "Intel(R) Xeon(R) Gold 6426Y"}.Write(t)
	dmi := filepath.Join(root, "sys", "firmware", "dmi", "tables", "DMI")
	if err := os.MkdirAll(filepath.Dir(dmi), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dmi, smbiosServerMemTable(), 0o000); err != nil {
		t.Fatal(err)
	}
	m := discoverAt(t, root)
	if notes := strings.Join(m.Notes, "\n"); strings.Count(notes, "is readable by root only") != 1 {
		t.Errorf("notes should say once that only root reads the table:\n%s", notes)
	}
}
