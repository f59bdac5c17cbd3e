package topology

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
)

// Which socket a DIMM slot belongs to. SMBIOS has no field for it: boards
// say it in the slot's labels, each vendor its own way, and some give each
// socket its own Physical Memory Array.

// dimmSocketPattern is one way boards name a slot's CPU: the first group of
// re is the socket number, 0- or 1-based.
type dimmSocketPattern struct {
	bank bool           // match the bank locator, not the locator
	re   *regexp.Regexp // case-insensitive; group 1 is the number
}

// dimmSocketPatterns, most telling first. Locators:
//
//	CPU0_DIMM_A1, CPU1_DIMM_B2, CPU1 DIMM A1, CPU0_A0, PROC 1 DIMM 3, SOCKET 0 ...
//	P1-DIMMA1, P2_DIMMA1 (Supermicro)
//	DIMM_P0_A0, DIMM_P1_I1 (Gigabyte, AMD reference boards)
//
// Bank locators:
//
//	P0_Node0_Channel0_Dimm0 (AMI), P0 CHANNEL A (AMD AGESA), P1-CH A
//	CPU 1 (Lenovo), Primary Main Board/CPU 0
//	NODE 1 (Intel boards; on others NODE is a memory controller, which the
//	range check below usually refuses)
//
// "BANK 0" and "Channel" numbers are never sockets.
var dimmSocketPatterns = []dimmSocketPattern{
	{false, regexp.MustCompile(`(?i)^(?:CPU|PROCESSOR|PROC|SOCKET)[ _-]*(\d{1,3})(?:\D|$)`)},
	{false, regexp.MustCompile(`(?i)^P(\d{1,3})[ _-]*DIMM`)},
	{false, regexp.MustCompile(`(?i)^DIMM[ _-]*P(\d{1,3})(?:[ _-]|$)`)},
	{true, regexp.MustCompile(`(?i)^P(\d{1,3})[ _-]+(?:NODE|CHANNEL|CH)`)},
	{true, regexp.MustCompile(`(?i)(?:^|[/ _-])(?:CPU|PROCESSOR|PROC|SOCKET)[ _-]*(\d{1,3})(?:\D|$)`)},
	{true, regexp.MustCompile(`(?i)^NODE[ _-]*(\d{1,3})$`)},
}

// dimmLetterRE is Dell's naming: A1..A16 on the first CPU, B1.. on the second.
var dimmLetterRE = regexp.MustCompile(`^([A-Z])\d{1,2}$`)

// dimmPlacement says which socket each DIMM slot belongs to.
type dimmPlacement struct {
	socket    []int  // per slot, an index into the sockets
	how       string // the rule that placed them, for a note
	conflicts int    // slots whose labels name two different sockets
}

// placeDIMMSlots assigns slots to n sockets (in discovery order: package
// order on a real machine) by, in turn:
//
//  1. the socket number in the locator or bank locator
//     (dimmSocketPatterns). Each pattern's numbers are 0-based when a 0
//     is among them, else 1-based ({1,2} on two sockets are CPU1 and CPU2),
//     and the pattern is not used when they name more sockets than n;
//  2. Dell's letters when every locator is one (A1, B3: A is the first
//     socket) and there are exactly n letters from A;
//  3. one system memory array per socket, in table order, when there are
//     n arrays (slots left unnamed by 1 take their array's socket);
//  4. an even split in table order, the first len/n slots on the first
//     socket.
//
// One socket gets every slot.
func placeDIMMSlots(slots []MemoryDevice, n int) dimmPlacement {
	p := dimmPlacement{socket: make([]int, len(slots))}
	if n <= 1 || len(slots) == 0 {
		p.how = "one socket"
		return p
	}
	hint, examples, conflicts := dimmLabelHints(slots, n)
	p.conflicts = conflicts
	if len(examples) == 0 && dimmByLetter(slots, n, hint) {
		examples = append(examples, strconv.Quote(slots[0].Locator))
	}
	named := 0
	for _, h := range hint {
		if h >= 0 {
			named++
		}
	}
	if named == len(slots) {
		copy(p.socket, hint)
		p.how = "slot labels such as " + strings.Join(examples, ", ")
		return p
	}
	if dimmByArray(slots, n, hint) {
		copy(p.socket, hint)
		p.how = "one memory array per socket"
		if named > 0 {
			p.how += " and slot labels such as " + strings.Join(examples, ", ")
		}
		return p
	}
	for i := range slots {
		p.socket[i] = i * n / len(slots)
	}
	p.how = "an even split in table order"
	if named > 0 {
		p.how += fmt.Sprintf(" (labels name the socket of only %d of %d slots)", named, len(slots))
	} else {
		p.how += " (the slot labels name no socket)"
	}
	return p
}

// dimmLabelHints reads each slot's socket from its labels with
// dimmSocketPatterns (rule 1 of placeDIMMSlots): hint is -1 for slots no
// usable pattern names, examples quotes a label of each pattern used, and
// conflicts counts slots that a later pattern puts on another socket.
func dimmLabelHints(slots []MemoryDevice, n int) (hint []int, examples []string, conflicts int) {
	hint = make([]int, len(slots))
	for i := range hint {
		hint[i] = -1
	}
	nums := make([]int, len(slots))
	for _, pat := range dimmSocketPatterns {
		lo, hi, example := -1, -1, ""
		for i, d := range slots {
			nums[i] = -1
			label := d.Locator
			if pat.bank {
				label = d.BankLocator
			}
			m := pat.re.FindStringSubmatch(label)
			if m == nil {
				continue
			}
			v, _ := strconv.Atoi(m[1]) // 1-3 digits
			nums[i] = v
			if lo < 0 || v < lo {
				lo = v
			}
			hi = max(hi, v)
			if example == "" {
				example = label
			}
		}
		base := 1
		if lo == 0 {
			base = 0
		}
		if hi < 0 || hi-base >= n {
			continue // no match, or more sockets than the machine has (NODE 0-7 are memory controllers)
		}
		used := false
		for i, v := range nums {
			switch {
			case v < 0:
			case hint[i] < 0:
				hint[i], used = v-base, true
			case hint[i] != v-base:
				conflicts++
			}
		}
		if used {
			examples = append(examples, strconv.Quote(example))
		}
	}
	return hint, examples, conflicts
}

// dimmLabelSockets is how many CPU sockets the slot labels name, read as
// on a board of up to 8: more than discovery found means a CPU socket is
// empty (its slots do not work) or sysfs hides the packages.
func dimmLabelSockets(slots []MemoryDevice) int {
	const most = 8
	hint, _, _ := dimmLabelHints(slots, most)
	var seen [most]bool
	n := 0
	for _, h := range hint {
		if h >= 0 && !seen[h] {
			seen[h] = true
			n++
		}
	}
	return n
}

// dimmByLetter fills hint from Dell-style locators when every slot has one
// and the letters are exactly the first n.
func dimmByLetter(slots []MemoryDevice, n int, hint []int) bool {
	seen := make([]bool, n)
	for _, d := range slots {
		m := dimmLetterRE.FindStringSubmatch(d.Locator)
		if m == nil || int(m[1][0]-'A') >= n {
			return false
		}
		seen[m[1][0]-'A'] = true
	}
	for _, s := range seen {
		if !s {
			return false
		}
	}
	for i, d := range slots {
		hint[i] = int(d.Locator[0] - 'A')
	}
	return true
}

// dimmByArray fills the unnamed slots of hint from their memory array when
// there are n arrays: an array whose named slots all name one socket is
// that socket, the others take the sockets left, in table order. It fails
// (changing nothing) when the arrays and the names disagree.
func dimmByArray(slots []MemoryDevice, n int, hint []int) bool {
	var arrays []int // in table order
	sock := map[int]int{}
	for _, d := range slots {
		if d.ArrayHandle < 0 {
			return false
		}
		if _, ok := sock[d.ArrayHandle]; !ok {
			arrays = append(arrays, d.ArrayHandle)
			sock[d.ArrayHandle] = -1
		}
	}
	if len(arrays) != n {
		return false
	}
	taken := make([]bool, n)
	for i, d := range slots {
		if hint[i] < 0 {
			continue
		}
		switch s := sock[d.ArrayHandle]; {
		case s < 0 && !taken[hint[i]]:
			sock[d.ArrayHandle], taken[hint[i]] = hint[i], true
		case s != hint[i]:
			return false
		}
	}
	next := 0
	for _, a := range arrays {
		if sock[a] >= 0 {
			continue
		}
		for taken[next] {
			next++
		}
		sock[a], taken[next] = next, true
	}
	for i, d := range slots {
		hint[i] = sock[d.ArrayHandle]
	}
	return true
}

// socketDIMMs is what SMBIOS says of one socket's memory.
type socketDIMMs struct {
	slots, modules int
	memoryType     string // "ddr4", "ddr5", or "" (mixed, unknown, or a kind the planner does not buy)
}

// dimmKind is the module kind a device states, or "" when it states none
// a planner could buy more of ("Unknown", "Other", non-volatile devices).
func dimmKind(d MemoryDevice) string {
	switch d.Type {
	case "", "Unknown", "Other", "Logical non-volatile device":
		return ""
	}
	return d.Type
}

// summarizeDIMMs counts slots and modules per socket and names each
// socket's memory type. A socket without modules takes the machine's
// type (the CPUs of a machine take one kind); with no module anywhere, the
// type the empty slots state, when they agree. typ is that machine-wide
// kind as SMBIOS names it ("DDR4", "DDR3", "" when mixed or unknown).
func summarizeDIMMs(slots []MemoryDevice, p dimmPlacement, n int) (per []socketDIMMs, typ string) {
	per = make([]socketDIMMs, n)
	kinds := make([]map[string]bool, n)
	all, empty := map[string]bool{}, map[string]bool{}
	for i, d := range slots {
		s := &per[p.socket[i]]
		s.slots++
		k := dimmKind(d)
		if !d.Installed {
			if k != "" {
				empty[k] = true
			}
			continue
		}
		s.modules++
		if k != "" {
			if kinds[p.socket[i]] == nil {
				kinds[p.socket[i]] = map[string]bool{}
			}
			kinds[p.socket[i]][k] = true
			all[k] = true
		}
	}
	typ = onlyKey(all)
	if len(all) == 0 {
		typ = onlyKey(empty)
	}
	for i := range per {
		k := typ
		if len(kinds[i]) > 0 {
			k = onlyKey(kinds[i])
		}
		if (k == "DDR4" || k == "DDR5") && per[i].slots > 0 {
			per[i].memoryType = strings.ToLower(k)
		}
	}
	return per, typ
}

// onlyKey is the key of a one-key set, else "".
func onlyKey(m map[string]bool) string {
	if len(m) != 1 {
		return ""
	}
	for k := range m {
		return k
	}
	return ""
}

// fillSocketDIMMs sets the DIMM slots, modules and memory type of sockets
// from per, leaving alone what is already set (a machine file's values).
// It returns how many sockets kept values of their own.
func fillSocketDIMMs(sockets []*Node, per []socketDIMMs) (kept int) {
	for i, s := range sockets {
		own := false
		if s.DIMMSlots == 0 && s.DIMMs == 0 {
			s.DIMMSlots, s.DIMMs = per[i].slots, per[i].modules
		} else {
			own = true
		}
		if s.MemoryType == "" {
			s.MemoryType = per[i].memoryType
		} else {
			own = true
		}
		if own {
			kept++
		}
	}
	return kept
}

// attachMemory fills each socket's DIMM slots, modules and memory type from
// SMBIOS Memory Device records (the raw table, else `dmidecode -t memory`
// on the running machine) and notes where they came from, or why not.
func (d *discoverer) attachMemory() error {
	devs, src, why := d.memoryDevices()
	if len(devs) == 0 {
		d.b.Note("DIMM slots unknown (%s): sockets get no dimm_slots, dimms or memory_type, so plans buy no memory; set them in the machine file", why)
		return nil
	}
	var slots []MemoryDevice
	for _, dv := range devs {
		if dv.DIMMSlot() {
			slots = append(slots, dv)
		}
	}
	if skipped := len(devs) - len(slots); skipped > 0 {
		d.b.Note("%d of %d memory device(s) from %s are not DIMM slots (soldered memory, or a video, flash or cache array): not counted", skipped, len(devs), src)
	}
	if len(slots) == 0 {
		return nil
	}
	sockets := d.b.m.NodesOfKind(KindSocket)
	p := placeDIMMSlots(slots, len(sockets))
	per, typ := summarizeDIMMs(slots, p, len(sockets))
	kept := fillSocketDIMMs(sockets, per)
	parts := make([]string, len(sockets))
	modules := 0
	for i, s := range sockets {
		parts[i] = fmt.Sprintf("%s %d of %d slots hold modules", s.ID, per[i].modules, per[i].slots)
		modules += per[i].modules
	}
	kind := "memory type " + strings.ToLower(typ)
	switch {
	case typ == "" && modules > 0:
		kind = "modules of mixed or unstated type: memory_type left empty"
	case typ == "":
		kind = "memory type not stated: memory_type left empty"
	case typ != "DDR4" && typ != "DDR5":
		kind = fmt.Sprintf("memory type %s, which plans do not buy (ddr4, ddr5): memory_type left empty", typ)
	}
	d.b.Note("DIMM slots from %s: %s; %s; sockets told apart by %s", src, strings.Join(parts, ", "), kind, p.how)
	if named := dimmLabelSockets(slots); named > len(sockets) {
		d.b.Note("the DIMM slot labels name %d CPU sockets, discovery found %d: slots of an empty CPU socket hold no usable memory; check dimm_slots", named, len(sockets))
	}
	if p.conflicts > 0 {
		d.b.Note("%d DIMM slot(s) have a locator and a bank locator that name different sockets: the locator was believed", p.conflicts)
	}
	if kept > 0 {
		d.b.Note("%d socket(s) keep DIMM slots or a memory type they already had", kept)
	}
	return nil
}

// memoryDevices reads the Memory Device records, saying where from; with
// none, why.
func (d *discoverer) memoryDevices() (devs []MemoryDevice, src, why string) {
	dmiPath := d.path("sys/firmware/dmi/tables/DMI")
	data, err := d.dmiTable()
	switch {
	case err == nil:
		devs, err := ParseSMBIOSMemory(dmiPath, data)
		switch {
		case err == nil && len(devs) > 0:
			return devs, "the SMBIOS table", ""
		case err == nil:
			why = "the SMBIOS table has no Memory Device (type 17) records"
		case d.dmiNoted:
			why = "the SMBIOS table is damaged, as noted"
		default:
			why = err.Error()
		}
	case errors.Is(err, fs.ErrNotExist):
		why = "no SMBIOS table at " + dmiPath
	case errors.Is(err, fs.ErrPermission):
		why = dmiPath + " is readable by root only; run discover as root"
	default:
		why = fmt.Sprintf("cannot read %s: %v", dmiPath, err)
	}
	if d.root != "/" || !d.opts.UseDmidecode {
		return nil, "", why
	}
	bin, err := exec.LookPath("dmidecode")
	if err != nil {
		return nil, "", why
	}
	out, err := exec.Command(bin, "-t", "memory").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && len(bytes.TrimSpace(ee.Stderr)) > 0 {
			err = errors.New(string(bytes.TrimSpace(ee.Stderr)))
		}
		return nil, "", why + "; dmidecode -t memory failed: " + shortErr(err)
	}
	devs, err = ParseDmidecodeMemory("dmidecode -t memory", out)
	switch {
	case err == nil && len(devs) > 0:
		return devs, "dmidecode -t memory", ""
	case err == nil:
		return nil, "", why + "; dmidecode -t memory lists no Memory Device"
	}
	return nil, "", why + "; " + err.Error()
}
