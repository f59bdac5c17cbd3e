package topology

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// SMBIOS System Slots (structure type 9) from two sources: the raw structure
// table the kernel exports at /sys/firmware/dmi/tables/DMI, and the text
// `dmidecode -t slot` prints. Section numbers below are those of the DMTF
// SMBIOS Reference Specification, DSP0134 3.x ("7.10" is System Slots).
// Names of slot types follow dmidecode's dmi_slot_type(), so that the binary
// and text paths give the same Type for the same slot. The table walk
// (smbiosWalk) and the text scanner (scanDmidecode) serve the memory
// records of smbios_memory.go too.

// SlotRecord is one SMBIOS type 9 System Slot.
type SlotRecord struct {
	Designation   string  // e.g. "PCIe Slot 1", "CPU1 SLOT6 PCI-E 4.0 X16"
	Type          string  // decoded slot type as dmidecode names it, e.g. "PCI Express 4 x16", "PCI Express 4 SFF-8639 (U.2)"
	PCIeGen       int     // 0 when the type (and the 3.4 Slot Information) says nothing
	DataWidth     int     // electrical lanes from the Slot Data Bus Width byte (x1..x32), 0 unknown
	Length        string  // "Short", "Long", "2.5\" drive form factor", ...
	InUse         bool    // Current Usage == In use (0x04)
	Available     bool    // Current Usage == Available (0x03)
	SlotID        int     // Slot ID (7.10.5); for PCI/PCIe slots usually the number the kernel gives /sys/bus/pci/slots/N
	SegmentGroup  int     // 0xffff when absent
	Bus           int     // bus of the device in the slot (0xff = none)
	Device        int     // device number (0x1f with Function 7 when devfn is 0xff, i.e. none)
	Function      int     // function number
	HasAddress    bool    // false when the record has no valid bus address (bus 0xff / dev-fn 0xff)
	Height        string  // SMBIOS 3.5 slot height if present ("Full height", "Low-profile", ...)
	PhysicalWidth int     // SMBIOS 3.4+ "Slot Physical Width" lanes if present, else 0
	PitchMM       float64 // SMBIOS 3.4+ "Slot Pitch" in millimetres, 0 when not given
}

// Address returns the PCI address of the device in the slot as
// "0000:3b:00.0", or "" when the record has none.
func (s SlotRecord) Address() string {
	if !s.HasAddress {
		return ""
	}
	return fmt.Sprintf("%04x:%02x:%02x.%x", s.SegmentGroup, s.Bus, s.Device, s.Function)
}

// smbiosDoubleWidthPitchMM is two standard card pitches: PCI and PCIe CEM
// add-in cards sit 0.8 inch (20.32 mm) apart, and a double-width card such
// as a datacenter GPU takes two of them.
const smbiosDoubleWidthPitchMM = 2 * 20.32

// DoubleWidthLikely reports whether a slot can take a double-width (two-slot) card
// such as a datacenter GPU: a PCIe x16 slot of "Long" length or full height, or
// one whose physical width is x16 with enough pitch (SMBIOS 3.4 Slot Pitch >= 2 x 20.32 mm).
//
// It is an estimate: SMBIOS does not describe the space beside a slot, and
// firmware often fills Length and Height carelessly. Low-profile slots and
// drive, M.2, Mini PCIe, OCP and EDSFF connectors never count.
func (s SlotRecord) DoubleWidthLikely() bool {
	if !smbiosIsCardSlot(s.Type) || s.Height == "Low-profile" {
		return false
	}
	// The card has to fit the connector: use the physical width when the
	// table gives it (3.4+), else the width in the type name ("PCI Express 3
	// x16" is an x16 connector even when Data Bus Width says x8), else the
	// electrical width.
	lanes := s.PhysicalWidth
	if lanes == 0 {
		lanes = smbiosTypeLanes(s.Type)
	}
	if lanes == 0 {
		lanes = s.DataWidth
	}
	if lanes < 16 {
		return false
	}
	return s.Length == "Long" || s.Height == "Full height" || s.PitchMM >= smbiosDoubleWidthPitchMM-0.005
}

// smbiosIsCardSlot reports whether a slot type is a CEM add-in card slot
// (PCI Express or a CXL Flexbus slot, which uses the same connector), as
// opposed to a drive bay, M.2 socket, Mini PCIe, OCP NIC or EDSFF slot.
func smbiosIsCardSlot(typ string) bool {
	switch {
	case strings.HasPrefix(typ, "CXL"):
		return true
	case !strings.HasPrefix(typ, "PCI Express"):
		return false
	case strings.Contains(typ, "SFF-8639"), strings.Contains(typ, "Mini"):
		return false
	}
	return true
}

// smbiosTypeLanes returns the width at the end of a slot type name
// ("PCI Express 4 x16" -> 16), or 0.
func smbiosTypeLanes(typ string) int {
	i := strings.LastIndex(typ, " x")
	if i < 0 {
		return 0
	}
	n, err := strconv.Atoi(typ[i+2:])
	if err != nil || n <= 0 || n > 32 {
		return 0
	}
	return n
}

// smbiosSlotType decodes the Slot Type byte (7.10.1, Table "System Slots:
// Slot Type") the way dmidecode names it. gen is the PCIe generation the code
// states, 0 when it states none. ok is false for codes the spec does not
// define; name is then empty.
func smbiosSlotType(code byte) (name string, gen int, ok bool) {
	switch {
	case code >= 0xA5 && code <= 0xC3 && code != 0xB7:
		// Six codes per generation: the bare connector, then x1 x2 x4 x8 x16.
		// 0xA5-0xAA carry no generation: they predate the Gen 2 codes and
		// firmware of Gen 2 and Gen 3 boards still uses them.
		base, g := byte(0xA5), 0
		switch {
		case code >= 0xBE:
			base, g = 0xBE, 5
		case code >= 0xB8:
			base, g = 0xB8, 4
		case code >= 0xB1:
			base, g = 0xB1, 3
		case code >= 0xAB:
			base, g = 0xAB, 2
		}
		name = "PCI Express"
		if g > 0 {
			name += " " + strconv.Itoa(g)
		}
		if i := code - base; i > 0 {
			name += " x" + strconv.Itoa([...]int{1, 2, 4, 8, 16}[i-1])
		}
		return name, g, true
	}
	switch code {
	case 0x01:
		return "Other", 0, true
	case 0x02:
		return "Unknown", 0, true
	case 0x03:
		return "ISA", 0, true
	case 0x04:
		return "MCA", 0, true
	case 0x05:
		return "EISA", 0, true
	case 0x06:
		return "PCI", 0, true
	case 0x07:
		return "PC Card (PCMCIA)", 0, true
	case 0x08:
		return "VLB", 0, true
	case 0x09:
		return "Proprietary", 0, true
	case 0x0A:
		return "Processor Card", 0, true
	case 0x0B:
		return "Proprietary Memory Card", 0, true
	case 0x0C:
		return "I/O Riser Card", 0, true
	case 0x0D:
		return "NuBus", 0, true
	case 0x0E:
		return "PCI-66", 0, true
	case 0x0F:
		return "AGP", 0, true
	case 0x10:
		return "AGP 2x", 0, true
	case 0x11:
		return "AGP 4x", 0, true
	case 0x12:
		return "PCI-X", 0, true
	case 0x13:
		return "AGP 8x", 0, true
	case 0x14:
		return "M.2 Socket 1-DP", 0, true
	case 0x15:
		return "M.2 Socket 1-SD", 0, true
	case 0x16:
		return "M.2 Socket 2", 0, true
	case 0x17:
		return "M.2 Socket 3", 0, true
	case 0x18:
		return "MXM Type I", 0, true
	case 0x19:
		return "MXM Type II", 0, true
	case 0x1A:
		return "MXM Type III", 0, true
	case 0x1B:
		return "MXM Type III-HE", 0, true
	case 0x1C:
		return "MXM Type IV", 0, true
	case 0x1D:
		return "MXM 3.0 Type A", 0, true
	case 0x1E:
		return "MXM 3.0 Type B", 0, true
	case 0x1F:
		return "PCI Express 2 SFF-8639 (U.2)", 2, true
	case 0x20:
		return "PCI Express 3 SFF-8639 (U.2)", 3, true
	case 0x21:
		return "PCI Express Mini 52-pin with bottom-side keep-outs", 0, true
	case 0x22:
		return "PCI Express Mini 52-pin without bottom-side keep-outs", 0, true
	case 0x23:
		return "PCI Express Mini 76-pin", 0, true
	case 0x24:
		return "PCI Express 4 SFF-8639 (U.2)", 4, true
	case 0x25:
		return "PCI Express 5 SFF-8639 (U.2)", 5, true
	case 0x26:
		return "OCP NIC 3.0 Small Form Factor (SFF)", 0, true
	case 0x27:
		return "OCP NIC 3.0 Large Form Factor (LFF)", 0, true
	case 0x28:
		return "OCP NIC Prior to 3.0", 0, true
	case 0x30:
		// CXL 1.x runs over the PCIe 5.0 physical layer (32 GT/s).
		return "CXL Flexbus 1.0", 5, true
	case 0xA0:
		return "PC-98/C20", 0, true
	case 0xA1:
		return "PC-98/C24", 0, true
	case 0xA2:
		return "PC-98/E", 0, true
	case 0xA3:
		return "PC-98/Local Bus", 0, true
	case 0xA4:
		return "PC-98/Card", 0, true
	case 0xC4:
		return "PCI Express 6+", 6, true
	case 0xC5:
		return "EDSFF E1", 0, true
	case 0xC6:
		return "EDSFF E3", 0, true
	}
	return "", 0, false
}

// smbiosCanonicalType maps a slot type name as some dmidecode version
// printed it to the name smbiosSlotType gives, and returns the generation the
// code states. ok is false when the name is not one dmidecode prints.
func smbiosCanonicalType(name string) (canon string, gen int, ok bool) {
	// Names older dmidecode releases used for the same codes (before the
	// SMBIOS 3.4 update of the table) and a typo in newer ones.
	switch name {
	case "PCI Express 2 SFF-8639":
		name = "PCI Express 2 SFF-8639 (U.2)"
	case "PCI Express 3 SFF-8639":
		name = "PCI Express 3 SFF-8639 (U.2)"
	case "CXL FLexbus 1.0":
		name = "CXL Flexbus 1.0"
	}
	for c := 1; c <= 0xFF; c++ {
		if n, g, ok := smbiosSlotType(byte(c)); ok && strings.EqualFold(n, name) {
			return n, g, true
		}
	}
	return name, 0, false
}

// smbiosWidthLanes decodes a Slot Data Bus Width or Slot Physical Width byte
// (7.10.2, "System Slots: Slot Width") to PCIe lanes; 0 for Other, Unknown,
// the parallel-bus bit widths and undefined codes.
func smbiosWidthLanes(code byte) int {
	switch code {
	case 0x08:
		return 1
	case 0x09:
		return 2
	case 0x0A:
		return 4
	case 0x0B:
		return 8
	case 0x0C:
		return 12
	case 0x0D:
		return 16
	case 0x0E:
		return 32
	}
	return 0
}

// smbiosSlotLength decodes the Slot Length byte (7.10.4).
func smbiosSlotLength(code byte) string {
	switch code {
	case 0x01:
		return "Other"
	case 0x02:
		return "Unknown"
	case 0x03:
		return "Short"
	case 0x04:
		return "Long"
	case 0x05:
		return "2.5\" drive form factor"
	case 0x06:
		return "3.5\" drive form factor"
	}
	return ""
}

// smbiosSlotHeight decodes the Slot Height byte (7.10.x, SMBIOS 3.5).
func smbiosSlotHeight(code byte) string {
	switch code {
	case 0x00:
		return "Not applicable"
	case 0x01:
		return "Other"
	case 0x02:
		return "Unknown"
	case 0x03:
		return "Full height"
	case 0x04:
		return "Low-profile"
	}
	return ""
}

// Current Usage codes (7.10.3).
const (
	smbiosUsageAvailable = 0x03
	smbiosUsageInUse     = 0x04
)

// Offsets in a type 9 structure (7.10, Table "System Slots (Type 9)
// structure"). The first three fields after the header exist since SMBIOS
// 2.0; the segment/bus/devfn since 2.6; the base data bus width and peer
// groups since 3.2; Slot Information, Physical Width and Pitch since 3.4;
// Slot Height since 3.5. The last four follow the 5-byte peer groups, so
// their offsets move with the peer group count.
const (
	smbiosSlotMinLen     = 0x0C // 2.0/2.1: up to Slot Characteristics 1
	smbiosSlotAddrLen    = 0x11 // 2.6: Segment Group (WORD), Bus, Device/Function
	smbiosSlotPeersLen   = 0x13 // 3.2: Data Bus Width (base), peer group count
	smbiosSlotPeerSize   = 5    // Segment (WORD), Bus, Device/Function, Width
	smbiosStructHeader   = 4    // Type, Length, Handle (WORD)
	smbiosTypeSlot       = 9
	smbiosTypeEndOfTable = 127
)

// ParseSMBIOSSlots decodes every type 9 structure in a raw SMBIOS structure table.
//
// table is the structure table alone, as /sys/firmware/dmi/tables/DMI holds
// it; path only names it in errors. Decoding stops at the End-of-Table
// structure (type 127) or at the end of the data. A malformed structure
// anywhere in the table is an *InputError, because past it the next
// structure cannot be found reliably.
func ParseSMBIOSSlots(path string, table []byte) ([]SlotRecord, error) {
	var slots []SlotRecord
	err := smbiosWalk(path, table, func(st smbiosStruct) error {
		if st.typ != smbiosTypeSlot {
			return nil
		}
		s, err := smbiosDecodeSlot(st.f, st.strs)
		if err != nil {
			return &InputError{Path: path, Field: st.field(), Msg: "bad System Slots structure", Err: err}
		}
		slots = append(slots, s)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return slots, nil
}

// smbiosStruct is one structure of a raw table.
type smbiosStruct struct {
	off    int    // offset in the table
	typ    byte   // structure type
	handle uint16 // structure handle
	f      []byte // formatted area, header included
	strs   []byte // string set without its final NUL pair
}

// field names the structure in errors: "structure at offset 0x2A0 (type 9, handle 0x0900)".
func (st smbiosStruct) field() string {
	return fmt.Sprintf("structure at offset 0x%X (type %d, handle 0x%04X)", st.off, st.typ, st.handle)
}

// smbiosWalk calls fn with each structure of a raw table, in order, up to
// and including the End-of-Table structure (type 127) or the end of the
// data. It stops at the first error fn returns. A structure whose header or
// string set is damaged is an *InputError naming its offset: past it the
// next structure cannot be found.
func smbiosWalk(path string, table []byte, fn func(smbiosStruct) error) error {
	for off := 0; off < len(table); {
		field := fmt.Sprintf("structure at offset 0x%X", off)
		// 6.1.2 Structure header: Type, Length (of the formatted area,
		// header included), Handle.
		if len(table)-off < smbiosStructHeader {
			return inputErrorf(path, field, "%d bytes left, want a 4-byte structure header", len(table)-off)
		}
		typ, length := table[off], int(table[off+1])
		if length < smbiosStructHeader {
			// A zero or short length would make the walk stand still.
			return inputErrorf(path, field, "length %d is shorter than the 4-byte header", length)
		}
		if off+length > len(table) {
			return inputErrorf(path, field, "type %d structure of %d bytes runs past the end of the table (%d bytes left)", typ, length, len(table)-off)
		}
		// 6.1.3 Text strings: the formatted area is followed by a set of
		// NUL-terminated strings ending with an extra NUL; a structure
		// without strings is followed by two NULs.
		end := bytes.Index(table[off+length:], []byte{0, 0})
		if end < 0 {
			return inputErrorf(path, field, "type %d string set is not terminated by two NUL bytes", typ)
		}
		st := smbiosStruct{off: off, typ: typ, handle: binary.LittleEndian.Uint16(table[off+2:]),
			f: table[off : off+length], strs: table[off+length : off+length+end]}
		if err := fn(st); err != nil {
			return err
		}
		if typ == smbiosTypeEndOfTable {
			break
		}
		off += length + end + 2
	}
	return nil
}

// smbiosDecodeSlot decodes one type 9 structure: f is its formatted area
// (header included), strs its string set without the final NUL pair.
func smbiosDecodeSlot(f, strs []byte) (SlotRecord, error) {
	if len(f) < smbiosSlotMinLen {
		return SlotRecord{}, fmt.Errorf("length %d, want at least %d (SMBIOS 2.0 layout)", len(f), smbiosSlotMinLen)
	}
	des, err := smbiosString(strs, f[0x04])
	if err != nil {
		return SlotRecord{}, fmt.Errorf("slot designation: %w", err)
	}
	s := SlotRecord{
		Designation: des,
		DataWidth:   smbiosWidthLanes(f[0x06]),
		Length:      smbiosSlotLength(f[0x08]),
		InUse:       f[0x07] == smbiosUsageInUse,
		Available:   f[0x07] == smbiosUsageAvailable,
		SlotID:      smbiosSlotID(f[0x05], f[0x09]),
		// Until 2.6 there is no address: report "none" the way 7.10.8 spells it.
		SegmentGroup: 0xFFFF, Bus: 0xFF, Device: 0x1F, Function: 7,
	}
	var known bool
	if s.Type, s.PCIeGen, known = smbiosSlotType(f[0x05]); !known {
		s.Type = fmt.Sprintf("out of spec (0x%02X)", f[0x05])
	}
	if len(f) >= smbiosSlotAddrLen {
		s.SegmentGroup = int(binary.LittleEndian.Uint16(f[0x0D:]))
		s.Bus = int(f[0x0F])
		s.Device, s.Function = int(f[0x10]>>3), int(f[0x10]&7)
		// 7.10.8: all ones means no device. Firmware often marks an empty
		// slot with bus 0xFF alone (e.g. 0000:ff:00.0), which on Intel
		// servers is an uncore device, never the card.
		s.HasAddress = s.SegmentGroup != 0xFFFF && s.Bus != 0xFF && f[0x10] != 0xFF
	}
	if len(f) >= smbiosSlotPeersLen {
		n := int(f[0x12])
		tail := smbiosSlotPeersLen + n*smbiosSlotPeerSize
		if len(f) >= tail+4 {
			// 3.4: Slot Information is the PCIe generation for PCIe
			// slots; trust the type code first, it is older and better
			// filled.
			if s.PCIeGen == 0 && strings.HasPrefix(s.Type, "PCI Express") && f[tail] > 0 && f[tail] < 16 {
				s.PCIeGen = int(f[tail])
			}
			s.PhysicalWidth = smbiosWidthLanes(f[tail+1])
			s.PitchMM = float64(binary.LittleEndian.Uint16(f[tail+2:])) / 100
		}
		if len(f) >= tail+5 {
			s.Height = smbiosSlotHeight(f[tail+4])
		}
	}
	return s, nil
}

// smbiosSlotID returns the Slot ID (7.10.5) of slot types whose first ID
// byte is a slot number: MCA and EISA, the PCI family (AGP, PCI-X, PCI
// Express incl. Mini, U.2 and the 3.4 OCP NIC 3.0 and EDSFF codes). For
// others the bytes mean something else (PCMCIA adapter and socket) or
// nothing, so it returns 0. dmidecode up to 3.6 prints no ID for U.2 Gen 4/5,
// OCP NIC 3.0 and EDSFF slots.
func smbiosSlotID(typ, id byte) int {
	switch {
	case typ == 0x04, typ == 0x05, typ == 0x06,
		typ >= 0x0E && typ <= 0x13,
		typ >= 0x1F && typ <= 0x27,
		typ >= 0xA5 && typ <= 0xC6 && typ != 0xB7:
		return int(id)
	}
	return 0
}

// smbiosString returns string number idx (1-based, 6.1.3) of a string set,
// trimmed; 0 means the structure gives none.
func smbiosString(strs []byte, idx byte) (string, error) {
	s, err := smbiosRawString(strs, idx)
	return strings.TrimSpace(string(s)), err
}

// smbiosRawString is string number idx of a string set as stored.
func smbiosRawString(strs []byte, idx byte) ([]byte, error) {
	if idx == 0 {
		return nil, nil
	}
	n := 0
	if len(strs) > 0 {
		n = bytes.Count(strs, []byte{0}) + 1
	}
	if int(idx) > n {
		return nil, fmt.Errorf("string %d requested, the structure has %d", idx, n)
	}
	for i := byte(1); i < idx; i++ {
		strs = strs[bytes.IndexByte(strs, 0)+1:]
	}
	if j := bytes.IndexByte(strs, 0); j >= 0 {
		strs = strs[:j]
	}
	return strs, nil
}

// ParseDmidecodeSlots reads the text `dmidecode -t slot` (or `-t 9`) prints.
//
// It also accepts the full `dmidecode` output and `dmidecode -q`, reading
// only the System Slot Information records. Fields it does not know are
// ignored; lines that are not dmidecode's are an *InputError with Line set.
// Both the layout of dmidecode 3.4 and older ("Type: x16 PCI Express 3 x16")
// and of 3.5 and newer ("Type: PCI Express 3 x16" plus "Data Bus Width: 16x
// or x16") are read.
func ParseDmidecodeSlots(path string, text []byte) ([]SlotRecord, error) {
	var (
		slots []SlotRecord
		cur   *SlotRecord // the record being read
	)
	err := scanDmidecode(path, text, map[string]int{"System Slot Information": smbiosTypeSlot}, dmidecodeVisitor{
		begin: func(int, int) {
			cur = &SlotRecord{SegmentGroup: 0xFFFF, Bus: 0xFF, Device: 0x1F, Function: 7}
		},
		field: func(key, val string) error { return smbiosSetTextField(cur, key, val) },
		end: func() error {
			slots = append(slots, *cur)
			return nil
		},
	})
	if err != nil {
		return nil, err
	}
	return slots, nil
}

// dmidecodeVisitor receives the records scanDmidecode reads: begin on a
// record title (its DMI type, and its handle or -1 when the output has no
// Handle lines), field for each "Name: value" line, end when the record is
// over (an error from end names the record's title line).
type dmidecodeVisitor struct {
	begin func(typ, handle int)
	field func(key, val string) error
	end   func() error
}

// scanDmidecode reads dmidecode's text output and passes v the records
// whose title is a key of titles (mapping to its DMI type); lines of other
// records are skipped. Records start at a Handle line or, in `-q` output,
// at their title. Lines that are not dmidecode's, and errors from v.field
// and v.end, are an *InputError with Line set.
func scanDmidecode(path string, text []byte, titles map[string]int, v dmidecodeVisitor) error {
	var (
		inRecord bool   // v.begin was called and v.end not yet
		inBlock  bool   // a Handle line or record title has been read
		other    bool   // inside a record of a type not in titles
		title    string // title of the record being read, or the one its Handle line wants
		handle   = -1   // handle of the current Handle line
		fieldIn  = -1   // indentation of the block's field lines
		inList   bool   // the last field had no value: deeper lines are its items
		lineNo   int
		want     []string // titles, quoted, for messages
		byType   = map[int]string{}
	)
	for t, typ := range titles {
		want = append(want, strconv.Quote(t))
		byType[typ] = t
	}
	sort.Strings(want)
	recordLine := 0 // line of the current record's title
	flush := func() error {
		if !inRecord {
			return nil
		}
		inRecord = false
		if err := v.end(); err != nil {
			return &InputError{Path: path, Line: recordLine, Field: smbiosQuote(title), Msg: "incomplete record", Err: err}
		}
		return nil
	}
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		lineNo++
		raw := strings.TrimRight(sc.Text(), " \t\r")
		line := strings.TrimLeft(raw, " \t")
		indent := len(raw) - len(line)
		bad := func(field, format string, args ...any) error {
			e := inputErrorf(path, field, format, args...)
			e.Line = lineNo
			return e
		}
		if line == "" {
			continue
		}
		if indent == 0 {
			if strings.HasPrefix(line, "Handle ") {
				h, typ, ok := smbiosHandleLine(line)
				if !ok {
					return bad(smbiosQuote(line), "want \"Handle 0xNNNN, DMI type N, N bytes\"")
				}
				if err := flush(); err != nil {
					return err
				}
				_, wanted := byType[typ]
				inBlock, other, title, handle, fieldIn, inList = true, !wanted, byType[typ], h, -1, false
				continue
			}
			if typ, ok := titles[line]; ok {
				// The record title; -q output has no Handle lines, so the
				// title alone starts a record.
				if err := flush(); err != nil {
					return err
				}
				v.begin(typ, handle)
				inRecord, inBlock, other, title, fieldIn, inList = true, true, false, line, -1, false
				recordLine = lineNo
				handle = -1
				continue
			}
			if !inBlock {
				if smbiosPreamble(line) {
					continue
				}
				return bad(smbiosQuote(line), "not dmidecode output: want a \"Handle\" line or %s", strings.Join(want, " or "))
			}
			// Another title inside a Handle block (records of other
			// types, or "Inactive", "End Of Table").
			if inRecord {
				return bad(smbiosQuote(line), "unexpected line in a %s record: want an indented field", title)
			}
			other = true
			continue
		}
		// Indented lines belong to the current record.
		if !inBlock {
			return bad(smbiosQuote(line), "indented line outside a record: want a \"Handle\" line first")
		}
		if other {
			continue
		}
		if !inRecord {
			return bad(smbiosQuote(line), "field before %q", title)
		}
		if fieldIn < 0 {
			fieldIn = indent
		}
		if indent > fieldIn {
			if !inList {
				return bad(smbiosQuote(line), "over-indented line: want \"Name: value\"")
			}
			continue // an item of a list such as Characteristics
		}
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			return bad(smbiosQuote(line), "want \"Name: value\"")
		}
		val = strings.TrimSpace(val)
		inList = val == ""
		if err := v.field(key, val); err != nil {
			return bad(key, "%v", err)
		}
	}
	if err := sc.Err(); err != nil {
		return &InputError{Path: path, Line: lineNo + 1, Msg: "want dmidecode output, lines shorter than 1 MiB", Err: err}
	}
	return flush()
}

// smbiosSetTextField stores one "Key: value" line of a dmidecode System Slot
// Information record in s. Unknown keys are ignored.
func smbiosSetTextField(s *SlotRecord, key, val string) error {
	switch key {
	case "Designation":
		// dmidecode prints string number 0 as "Not Specified".
		if val != "Not Specified" {
			s.Designation = val
		}
	case "Type":
		s.Type, s.PCIeGen = smbiosTextType(s, val)
	case "Data Bus Width":
		// 3.5+: "16x or x16". 3.2-3.4 print the 3.2 base width byte under
		// this name as a bare number; that is not the slot width.
		if _, err := strconv.Atoi(val); err == nil {
			return nil
		}
		n, err := smbiosTextLanes(val)
		if err != nil {
			return err
		}
		if n > 0 {
			s.DataWidth = n
		}
	case "Slot Physical Width":
		n, err := smbiosTextLanes(val)
		if err != nil {
			return err
		}
		s.PhysicalWidth = n
	case "Current Usage":
		s.InUse = strings.EqualFold(val, "In Use")
		s.Available = strings.EqualFold(val, "Available")
	case "Length":
		s.Length = val
	case "Height":
		s.Height = val
	case "ID":
		// PCMCIA slots print "Adapter N, Socket M"; only numbers are IDs.
		if n, err := strconv.Atoi(val); err == nil && n >= 0 && n <= 0xFF {
			s.SlotID = n
		}
	case "Bus Address":
		return smbiosTextAddress(s, val)
	case "PCI Express Generation":
		n, err := strconv.Atoi(val)
		if err != nil || n < 1 || n > 15 {
			return fmt.Errorf("%q: want a PCIe generation number", val)
		}
		if s.PCIeGen == 0 {
			s.PCIeGen = n
		}
	case "Pitch":
		v, err := strconv.ParseFloat(strings.TrimSuffix(val, " mm"), 64)
		if err != nil || v < 0 || v > 655.35 {
			return fmt.Errorf("%q: want a length like \"20.32 mm\"", val)
		}
		s.PitchMM = v
	}
	return nil
}

// smbiosTextType splits dmidecode's Type value. dmidecode 3.4 and older
// print the Slot Data Bus Width before the type ("x8 PCI Express 3 x16":
// x8 electrical in an x16 connector; "32-bit PCI"); 3.5 and newer print
// the width on its own line. It sets s.DataWidth from the prefix and
// returns the type name and the generation it states.
func smbiosTextType(s *SlotRecord, val string) (string, int) {
	if first, rest, ok := strings.Cut(val, " "); ok {
		switch {
		case len(first) > 1 && first[0] == 'x':
			if n, err := strconv.Atoi(first[1:]); err == nil && n > 0 && n <= 32 {
				s.DataWidth, val = n, rest
			}
		case strings.HasSuffix(first, "-bit"):
			if _, err := strconv.Atoi(strings.TrimSuffix(first, "-bit")); err == nil {
				val = rest
			}
		}
	}
	name, gen, ok := smbiosCanonicalType(val)
	if !ok {
		// A newer dmidecode may know codes this table does not: keep
		// the text and read the generation from it.
		gen = 0
		if i := strings.Index(name, "PCI Express "); i >= 0 {
			rest := name[i+len("PCI Express "):]
			if len(rest) > 0 && rest[0] >= '1' && rest[0] <= '9' && (len(rest) == 1 || rest[1] == ' ' || rest[1] == '+') {
				gen = int(rest[0] - '0')
			}
		}
	}
	return name, gen
}

// smbiosTextLanes reads a width as dmidecode prints it: "16x or x16" (3.5+),
// "x16", or "Other"/"Unknown"/"8 bit" (no lanes).
func smbiosTextLanes(val string) (int, error) {
	f := strings.Fields(val)
	if len(f) == 0 {
		return 0, nil
	}
	w := f[len(f)-1]
	if len(w) < 2 || w[0] != 'x' {
		return 0, nil
	}
	n, err := strconv.Atoi(w[1:])
	if err != nil || n < 1 || n > 32 {
		return 0, fmt.Errorf("%q: want a width like \"16x or x16\"", val)
	}
	return n, nil
}

// smbiosTextAddress reads "Bus Address: 0000:3b:00.0" (7.10.8 as dmidecode
// prints it).
func smbiosTextAddress(s *SlotRecord, val string) error {
	bad := fmt.Errorf("%q: want a PCI address like \"0000:3b:00.0\"", val)
	seg, rest, ok1 := strings.Cut(val, ":")
	bus, rest, ok2 := strings.Cut(rest, ":")
	dev, fn, ok3 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || !ok3 || len(seg) != 4 || len(bus) != 2 || len(dev) != 2 || len(fn) != 1 {
		return bad
	}
	var v [4]uint64
	for i, p := range []string{seg, bus, dev, fn} {
		n, err := strconv.ParseUint(p, 16, 16)
		if err != nil {
			return bad
		}
		v[i] = n
	}
	if v[2] > 0x1F || v[3] > 7 {
		return bad
	}
	s.SegmentGroup, s.Bus, s.Device, s.Function = int(v[0]), int(v[1]), int(v[2]), int(v[3])
	// Same rule as the binary decoder: bus 0xFF or devfn 0xFF is no device.
	s.HasAddress = v[0] != 0xFFFF && v[1] != 0xFF && !(v[2] == 0x1F && v[3] == 7)
	return nil
}

// smbiosHandleLine reads "Handle 0x001C, DMI type 9, 17 bytes" and returns
// the handle and the type.
func smbiosHandleLine(line string) (handle, typ int, ok bool) {
	head, rest, ok := strings.Cut(line, ", DMI type ")
	if !ok {
		return 0, 0, false
	}
	num, _, ok := strings.Cut(rest, ",")
	if !ok {
		return 0, 0, false
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 || n > 255 {
		return 0, 0, false
	}
	h, err := strconv.ParseUint(strings.TrimPrefix(head, "Handle 0x"), 16, 16)
	if err != nil || !strings.HasPrefix(head, "Handle 0x") {
		return 0, 0, false
	}
	return int(h), n, true
}

// smbiosPreamble reports whether an unindented line outside any record is
// one dmidecode prints before the records or instead of them.
func smbiosPreamble(line string) bool {
	for _, p := range []string{
		"#", "Getting SMBIOS data from", "SMBIOS ", "Legacy DMI ", "Table at ",
		"Scanning ", "Reading SMBIOS/DMI data from", "Wrong DMI structures",
		"Invalid entry length", "Found SMBIOS entry point", "Found DMI entry point",
	} {
		if strings.HasPrefix(line, p) {
			return true
		}
	}
	return strings.Contains(line, " structures occupying ")
}

// smbiosQuote quotes a line for an error message, shortened.
func smbiosQuote(line string) string {
	const max = 60
	if len(line) > max {
		line = line[:max] + "..."
	}
	return strconv.Quote(line)
}
