package proxy

import (
	"slices"

	"github.com/redlock-proxy/redlock-proxy/internal/ascii"

	"github.com/redlock-proxy/redlock-proxy/internal/acl"
	"github.com/redlock-proxy/redlock-proxy/resp"
)

// commandSubs are COMMAND's subcommands with Redis 7.0's arities.
var commandSubs = map[string]int{
	"count": 2, "docs": -2, "getkeys": -3, "getkeysandflags": -3, "help": 2, "info": -2, "list": -2,
}

func init() {
	commands["command"] = command{arity: -1, subs: commandSubs, handler: (*Server).commandCmd}
}

// commandGroups is the group COMMAND DOCS gives a command, as Redis's;
// a command not named here is in "generic".
var commandGroups = map[string]string{
	"ping": "connection", "echo": "connection", "quit": "connection", "auth": "connection", "hello": "connection",
	"reset": "connection", "select": "connection", "client": "connection",
	"cluster": "cluster", "readonly": "cluster", "readwrite": "cluster",
	"set": "string", "get": "string", "delex": "string", "delifeq": "string", "digest": "string",
	"eval": "scripting", "evalsha": "scripting", "script": "scripting",
	"subscribe": "pubsub", "psubscribe": "pubsub", "unsubscribe": "pubsub", "punsubscribe": "pubsub",
	"ssubscribe": "pubsub", "sunsubscribe": "pubsub",
	"multi": "transactions", "exec": "transactions", "discard": "transactions", "watch": "transactions", "unwatch": "transactions",
	"info": "server", "command": "server", "config": "server", "latency": "server", "slowlog": "server",
	"monitor": "server", "role": "server", "time": "server", "dbsize": "server",
	"hget": "hash", "hgetall": "hash", "hlen": "hash", "zrange": "sorted-set", "zcard": "sorted-set", "strlen": "string",
}

// COMMAND [COUNT | DOCS [name ...] | INFO [name ...] | LIST [FILTERBY PATTERN p] | GETKEYS cmd arg ...]
//
// What the proxy serves, in Redis 7.0's shapes: the commands of its
// table, their arity and key positions from the table.
func (s *Server) commandCmd(r *request) (resp.Reply, error) {
	if len(r.args) == 1 {
		return commandInfos(sortedCommands()), nil
	}
	switch ascii.Lower(r.args[1]) {
	case "count":
		return resp.Int(int64(len(commands))), nil
	case "list":
		return commandList(r.args[2:])
	case "info":
		names := sortedCommands()
		if len(r.args) > 2 {
			names = lowerArgs(r.args[2:])
		}
		return commandInfos(names), nil
	case "docs":
		names := sortedCommands()
		if len(r.args) > 2 {
			names = lowerArgs(r.args[2:])
		}
		return commandDocs(names), nil
	case "getkeys":
		cm, ok := commands[ascii.Lower(r.args[2])]
		switch {
		case !ok:
			return resp.Reply{}, errGetkeysCommand
		case wrongArity(cm.arity, len(r.args)-2):
			return resp.Reply{}, errGetkeysArity
		}
		keys := keysOf(cm.keys, r.args[2:])
		if len(keys) == 0 {
			return resp.Reply{}, errGetkeysNoKeys
		}
		items := make([]resp.Reply, len(keys))
		for i, k := range keys {
			items[i] = resp.Bulk(string(k))
		}
		return resp.Array(items...), nil
	}
	return resp.Reply{}, withArgs(errCommandSubcommand, ascii.Upper(r.args[1]))
}

func sortedCommands() []string {
	names := make([]string, 0, len(commands))
	for name := range commands {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

func lowerArgs(args [][]byte) []string {
	names := make([]string, len(args))
	for i, a := range args {
		names[i] = ascii.Lower(a)
	}
	return names
}

// commandList is COMMAND LIST [FILTERBY PATTERN p | ACLCAT c | MODULE m].
func commandList(args [][]byte) (resp.Reply, error) {
	keep := func(string) bool { return true }
	switch {
	case len(args) == 0:
	case len(args) == 3 && ascii.EqualFold(args[0], "filterby"):
		arg := string(args[2])
		switch ascii.Lower(args[1]) {
		case "pattern":
			keep = func(name string) bool { return acl.Match(ascii.Lower(arg), []byte(name)) }
		case "aclcat":
			keep = func(name string) bool {
				return slices.Contains(aclCategories(commands[name]), "@"+ascii.Lower(arg))
			}
		case "module":
			keep = func(string) bool { return false } // no modules
		default:
			return resp.Reply{}, resp.ErrSyntax
		}
	default:
		return resp.Reply{}, resp.ErrSyntax
	}
	var items []resp.Reply
	for _, name := range sortedCommands() {
		if keep(name) {
			items = append(items, resp.Bulk(name))
		}
	}
	return resp.Array(items...), nil
}

// commandInfos is COMMAND INFO's reply: one entry per name, nil for one
// the proxy does not serve.
func commandInfos(names []string) resp.Reply {
	items := make([]resp.Reply, len(names))
	for i, name := range names {
		cm, ok := commands[name]
		if !ok {
			items[i] = resp.NullArray()
			continue
		}
		var subs []resp.Reply
		for _, sub := range sortedKeys(cm.subs) {
			subs = append(subs, commandInfo(name+"|"+sub, cm.subs[sub], cm))
		}
		items[i] = commandInfo(name, cm.arity, cm, subs...)
	}
	return resp.Array(items...)
}

// commandInfo is one entry of COMMAND INFO, in Redis 7.0's ten fields:
// name, arity, flags, first key, last key, step, ACL categories, tips,
// key specs, subcommands.
func commandInfo(name string, arity int, cm command, subs ...resp.Reply) resp.Reply {
	first, last, step := int64(0), int64(0), int64(0)
	switch cm.keys {
	case firstKey:
		first, last, step = 1, 1, 1
	case everyArg:
		first, last, step = 1, -1, 1
	}
	var flags []resp.Reply
	switch {
	case cm.class == acl.Read:
		flags = append(flags, resp.Status("readonly"))
	case cm.class == acl.Lock:
		flags = append(flags, resp.Status("write"))
	case cm.class == acl.Admin:
		flags = append(flags, resp.Status("admin"))
	}
	if cm.keys == scriptKeys {
		flags = append(flags, resp.Status("movablekeys"))
	}
	if cm.noAuth {
		flags = append(flags, resp.Status("no_auth"))
	}
	var cats []resp.Reply
	for _, c := range aclCategories(cm) {
		cats = append(cats, resp.Status(c))
	}
	return resp.Array(resp.Bulk(name), resp.Int(int64(arity)), resp.Array(flags...),
		resp.Int(first), resp.Int(last), resp.Int(step), resp.Array(cats...),
		resp.Array(), resp.Array(), resp.Array(subs...))
}

// aclCategories names a command's class as Redis's ACL categories.
func aclCategories(cm command) []string {
	switch cm.class {
	case acl.Read:
		return []string{"@read"}
	case acl.Lock:
		return []string{"@write"}
	case acl.Admin:
		return []string{"@admin", "@dangerous"}
	}
	return []string{"@connection"}
}

// commandDocs is COMMAND DOCS's reply: a map of the served names to
// their docs; a name the proxy does not serve is left out, as Redis does.
func commandDocs(names []string) resp.Reply {
	var kv []resp.Reply
	for _, name := range names {
		cm, ok := commands[name]
		if !ok {
			continue
		}
		doc := []resp.Reply{
			resp.Bulk("summary"), resp.Bulk(commandSummary(name)),
			resp.Bulk("group"), resp.Bulk(commandGroup(name)),
		}
		if len(cm.subs) > 0 {
			var subs []resp.Reply
			for _, sub := range sortedKeys(cm.subs) {
				subs = append(subs, resp.Bulk(name+"|"+sub), resp.Map(
					resp.Bulk("summary"), resp.Bulk(""),
					resp.Bulk("group"), resp.Bulk(commandGroup(name))))
			}
			doc = append(doc, resp.Bulk("subcommands"), resp.Map(subs...))
		}
		kv = append(kv, resp.Bulk(name), resp.Map(doc...))
	}
	return resp.Map(kv...)
}

func commandGroup(name string) string {
	if g, ok := commandGroups[name]; ok {
		return g
	}
	return "generic"
}

// commandSummary says what the proxy does with a command.
func commandSummary(name string) string {
	cm := commands[name]
	switch cm.class {
	case acl.Read:
		return "A quorum read: what a quorum of the nodes agree on."
	case acl.Lock:
		return "A lock operation, decided by a quorum of the nodes."
	case acl.Admin:
		return "For admin users."
	}
	return "Served by the proxy itself; no node sees it."
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
