-- Headless test of the plugin layout (plugin/cairn.lua, lua/cairn/, doc/)
-- against the real `cairn serve`, in a fresh repository with no memory file
-- open: commands, the cockpit, refreshes, the silent reload of a buffer opened
-- before its file existed, :CairnUndo, edit before accept with its live check
-- (cairn/checkEdited), the messages of reviews and decisions, :checkhealth
-- cairn and :help cairn.
--
--   nvim --headless --clean -u NONE -c "luafile editors/nvim/test/plugin.lua"
--
-- Environment (set by tests/editors/test_nvim_plugin.py; Neovim runs in the workspace):
--   CAIRN_TEST_WS     a fresh git repository (`cairn` is on PATH)
--   CAIRN_TEST_DOC    a copy of editors/nvim/doc (helptags are generated there)
--   CAIRN_TEST_OUT    directory for the bytes of the files the test changed
--
-- Every wait is bounded (vim.wait).  Any failure prints "cairn plugin: FAIL: ..."
-- on stderr, stops the server and exits 1; success prints "cairn plugin: OK".
local here = debug.getinfo(1, "S").source:sub(2)
local plugin_dir = vim.fn.fnamemodify(here, ":p:h:h")

local TIMEOUT = 90000

local harness = dofile(vim.fn.fnamemodify(here, ":p:h") .. "/harness.lua")
local check = harness.check
local messages, errors = harness.messages, harness.errors

local function wait_for(what, pred)
  harness.wait_for(what, pred, TIMEOUT, true)
end

local function notified(pattern)
  for _, msg in ipairs(messages) do
    if msg:match(pattern) then
      return msg
    end
  end
end

local function clear(t)
  for i = #t, 1, -1 do t[i] = nil end -- in place: the harness appends to these tables
end

local function read(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local data = f:read("*a")
  f:close()
  return data
end

local function write(path, data)
  local f = check(io.open(path, "wb"), "cannot write %s", path)
  f:write(data)
  f:close()
end

local function buffer_has(buf, pattern)
  for _, line in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    if line:find(pattern, 1, true) then
      return true
    end
  end
  return false
end

-- Whether cockpit `buf` shows a line below its header (rows, or why there are none): the header
-- ends with its first blank line, and takes more lines the more its keys need in a narrow window.
local function drawn(buf)
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  for i, line in ipairs(lines) do
    if line == "" then
      return #lines > i
    end
  end
  return false
end

-- Whether cockpit `buf` lists a topic whose file matches `pattern` (a long name is cut to fit its column).
local function lists_topic(buf, pattern)
  local cockpit = require("cairn.cockpit")
  local win, found = vim.api.nvim_get_current_win(), false
  local cursor = vim.api.nvim_win_get_cursor(win)
  for i = 1, vim.api.nvim_buf_line_count(buf) do
    vim.api.nvim_win_set_cursor(win, { i, 0 })
    local row = cockpit.row_at_cursor(buf)
    found = found or (row ~= nil and tostring(row.file or ""):match(pattern) ~= nil)
  end
  vim.api.nvim_win_set_cursor(win, cursor)
  return found
end

local function line_of(buf, text)
  for i, line in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    if line:find(text, 1, true) then
      return i
    end
  end
end

local function main()
  local ws = os.getenv("CAIRN_TEST_WS")
  local out = os.getenv("CAIRN_TEST_OUT")
  -- installed as a plugin: on 'runtimepath', its plugin/ file sourced (no setup call)
  vim.opt.runtimepath:prepend(plugin_dir)
  vim.cmd("runtime plugin/cairn.lua")
  for _, name in ipairs({ "Cairn", "CairnStatus", "CairnDrain", "CairnProposals", "CairnRemember", "CairnAccept",
    "CairnReject", "CairnUndo", "CairnUnreject", "CairnShow", "CairnEdit" }) do
    check(vim.fn.exists(":" .. name) == 2, "user command :%s is missing", name)
  end
  check(package.loaded["cairn.lsp"] == nil, "plugin/cairn.lua loaded the client at startup")
  local cairn = require("cairn")
  check(vim.loop.cwd() == ws, "cwd is %s", vim.loop.cwd())

  -- no memory file is open: the commands start the server for the repository
  vim.cmd("CairnStatus")
  wait_for(":CairnStatus", function() return notified("^cairn: 0 proposals, propose mode") end)
  check(#harness.cairn_clients() == 1, "%d cairn clients", #harness.cairn_clients())
  check(cairn.client(0).config.root_dir == ws, "root %s", cairn.client(0).config.root_dir)

  vim.cmd("CairnRemember type=feedback Never rebase a branch someone else pushed to")
  local first = nil
  wait_for(":CairnRemember's proposal", function()
    local msg = notified("^cairn: (p%x+) pending: ")
    first = msg and msg:match("^cairn: (p%x+) pending")
    return first ~= nil
  end)

  vim.cmd("CairnProposals")
  wait_for("the quickfix list", function() return #vim.fn.getqflist() == 1 end)
  check(vim.fn.getqflist()[1].text:find(first, 1, true) == 1, "quickfix: %s", vim.inspect(vim.fn.getqflist()))
  vim.cmd("cclose")
  wait_for("the statusline count", function() return cairn.statusline() == "cairn:1" end)

  vim.cmd("CairnDrain")
  wait_for("the drain's end", function() return notified("^cairn: drain done") end)

  -- the cockpit lists the pending proposal; `a` on its line accepts it
  local cockpit
  cairn.cockpit(nil, function(buf) cockpit = buf end)
  wait_for("the cockpit", function() return cockpit ~= nil and line_of(cockpit, first) ~= nil end)
  check(vim.api.nvim_get_current_buf() == cockpit, "the cockpit is not the current buffer")
  check(buffer_has(cockpit, "[Pending]"), "the cockpit's header lacks its view")
  local proposal = nil
  cairn.request("cairn/proposal", { id = first }, function(_, p) proposal = p end)
  wait_for("cairn/proposal", function() return proposal ~= nil end)
  local target = ws .. "/" .. proposal.target
  local before = read(target)
  check(before == nil, "%s exists before its proposal is accepted", proposal.target)
  -- the new topic's file is open in a buffer (in another window) before it exists: once the accept
  -- creates it, the buffer holds its text, without the W13 "created after editing started" dialog
  vim.cmd("split " .. vim.fn.fnameescape(target))
  local topic_buf, topic_win = vim.api.nvim_get_current_buf(), vim.api.nvim_get_current_win()
  vim.cmd("wincmd p")
  check(vim.api.nvim_get_current_buf() == cockpit, "not back in the cockpit")
  vim.v.warningmsg = ""
  vim.api.nvim_win_set_cursor(0, { line_of(cockpit, first), 0 })
  vim.cmd("normal a")
  wait_for("the accept's message", function() return notified("^cairn: accepted: " .. first .. " applied") end)
  local after = read(target)
  check(after ~= nil and after ~= before, "accepting from the cockpit left %s unchanged", proposal.target)
  wait_for("the open buffer of the new topic to hold its text", function()
    return vim.api.nvim_buf_is_valid(topic_buf)
      and table.concat(vim.api.nvim_buf_get_lines(topic_buf, 0, -1, false), "\n") .. "\n" == after
  end)
  check(not vim.bo[topic_buf].modified, "the reloaded buffer is modified")
  check(not vim.v.warningmsg:find("W13", 1, true), "the reload warned: %s", vim.v.warningmsg)
  vim.cmd("checktime") -- nothing is left for Neovim to ask about either
  check(not vim.v.warningmsg:find("W1", 1, true), "checktime after the reload warned: %s", vim.v.warningmsg)
  check(table.concat(vim.api.nvim_buf_get_lines(topic_buf, 0, -1, false), "\n") .. "\n" == after,
    "checktime changed the reloaded buffer")
  vim.api.nvim_win_close(topic_win, false)
  vim.api.nvim_set_current_buf(cockpit)
  write(out .. "/accepted-target", proposal.target)
  -- the views follow: the cockpit, the statusline and the quickfix list
  wait_for("the cockpit to drop the accepted row", function() return line_of(cockpit, first) == nil end)
  wait_for("the statusline after the accept", function() return cairn.statusline() == "cairn" end)
  wait_for("the quickfix list after the accept", function() return #vim.fn.getqflist() == 0 end)

  -- a decision this client did not follow up (a raw request): the server's notifications refresh
  local second = nil
  cairn.request("workspace/executeCommand", { command = "cairn.remember", arguments = { {
    text = "The CI cache is keyed on the lockfile hash", type = "project", workspace = ws } } }, function(e, r)
    check(e == nil, "cairn.remember: %s", e and e.message or "")
    second = r.result.proposals[1].id
  end)
  wait_for("the second proposal", function() return second ~= nil end)
  wait_for("the statusline to count the second proposal", function() return cairn.statusline() == "cairn:1" end)
  wait_for("the quickfix list to list the second proposal", function()
    local qf = vim.fn.getqflist()
    return #qf == 1 and qf[1].text:find(second, 1, true) == 1
  end)
  wait_for("the cockpit to list the second proposal", function() return line_of(cockpit, second) ~= nil end)

  -- edit before accept: `e` opens the new content, :w accepts the edited text
  vim.api.nvim_set_current_buf(cockpit)
  vim.api.nvim_win_set_cursor(0, { line_of(cockpit, second), 0 })
  vim.cmd("normal e")
  wait_for("the edit buffer", function() return vim.api.nvim_buf_get_name(0) == "cairn://edit/" .. second end)
  local edit = vim.api.nvim_get_current_buf()
  check(vim.bo[edit].buftype == "acwrite", "the edit buffer's buftype is %s", vim.bo[edit].buftype)
  -- the live check (cairn/checkEdited): the index line the accept writes follows the edited name, and
  -- front matter the accept would refuse is a diagnostic on its line
  local cockpit_mod = require("cairn.cockpit")
  local function index_shown()
    local marks = vim.api.nvim_buf_get_extmarks(edit, cockpit_mod.index_ns, 0, -1, { details = true })
    local shown = {}
    for _, mark in ipairs(marks) do
      for _, chunk in ipairs(mark[4].virt_text or {}) do
        table.insert(shown, chunk[1])
      end
    end
    return table.concat(shown, "")
  end
  local function line_starting(prefix)
    for i, line in ipairs(vim.api.nvim_buf_get_lines(edit, 0, -1, false)) do
      if line:sub(1, #prefix) == prefix then
        return i
      end
    end
  end
  wait_for("the index line of the edit", function() return index_shown():find("MEMORY.md: - [", 1, true) end)
  local name_line = check(line_starting("name:"), "no name: line in the edit buffer")
  local desc_line = check(line_starting("description:"), "no description: line in the edit buffer")
  vim.api.nvim_buf_set_lines(edit, name_line - 1, name_line, false, { "name: CI cache key" })
  wait_for("the index line to follow the edited name", function()
    return index_shown():find("MEMORY.md: - [CI cache key](", 1, true)
  end)
  local description = vim.api.nvim_buf_get_lines(edit, desc_line - 1, desc_line, false)[1]
  vim.api.nvim_buf_set_lines(edit, desc_line - 1, desc_line, false, { "description: use: the lockfile hash" })
  local function front_matter_diagnostics()
    return vim.tbl_filter(function(d) return d.code == "E_TOPIC_FRONT_MATTER" end, vim.diagnostic.get(edit))
  end
  wait_for("a diagnostic for the broken front matter", function() return #front_matter_diagnostics() == 1 end)
  local problem = front_matter_diagnostics()[1]
  check(problem.severity == vim.diagnostic.severity.ERROR and problem.message:find("E_TOPIC_FRONT_MATTER", 1, true)
    and problem.lnum >= name_line - 1, "the front matter diagnostic: %s", vim.inspect(problem))
  vim.api.nvim_buf_set_lines(edit, desc_line - 1, desc_line, false, { description })
  wait_for("the diagnostic to go once the front matter is fixed", function()
    return #vim.diagnostic.get(edit) == 0
  end)
  check(index_shown():find("[CI cache key](", 1, true), "the index line lost the edited name: %s", index_shown())
  vim.api.nvim_buf_set_lines(edit, -1, -1, false, { "", "Edited in Neovim." })
  vim.cmd("write")
  wait_for("the edited accept", function() return notified("^cairn: accepted as edited: ") end)
  check((read(ws .. "/.agents/memory/MEMORY.md") or ""):find("[CI cache key](", 1, true),
    "MEMORY.md lacks the edited name")
  local edited_target = nil
  for _, row in ipairs(require("cairn.commands").rows_sync("history", ws)) do
    if row.state == "applied" and row.id ~= first then
      edited_target = row.target
    end
  end
  check(edited_target ~= nil, "no applied edited proposal in history")
  check((read(ws .. "/" .. edited_target) or ""):find("Edited in Neovim.", 1, true), "the edit was not written")
  wait_for("the statusline after the edited accept", function() return cairn.statusline() == "cairn" end)

  -- `r` in the cockpit asks first, then rejects
  local third = nil
  cairn.remember("Release notes live in docs/releases", "project", function(e, r)
    check(e == nil, "cairn.remember: %s", e and e.message or "")
    third = r.result.proposals[1].id
  end)
  wait_for("the third proposal", function() return third ~= nil end)
  wait_for("the cockpit to list the third proposal", function() return line_of(cockpit, third) ~= nil end)
  vim.api.nvim_set_current_buf(cockpit)
  vim.api.nvim_win_set_cursor(0, { line_of(cockpit, third), 0 })
  local asked = nil
  local select = vim.ui.select
  vim.ui.select = function(items, opts, on_choice)
    asked = opts.prompt
    on_choice(items[1])
  end
  vim.cmd("normal r")
  wait_for("the reject's message", function() return notified("^cairn: rejected: " .. third .. " rejected") end)
  vim.ui.select = select
  check(asked and asked:find(third, 1, true) and asked:match("^cairn: reject"), "reject prompt: %s", tostring(asked))
  wait_for("the cockpit to drop the rejected row", function() return line_of(cockpit, third) == nil end)

  -- :CairnUndo completes decided proposals by id and by title
  local ids = vim.fn.getcompletion("CairnUndo ", "cmdline")
  check(vim.tbl_contains(ids, first) and #ids >= 2, "completion of :CairnUndo: %s", vim.inspect(ids))
  check(#ids == #vim.fn.uniq(vim.fn.sort(vim.deepcopy(ids))), "duplicate ids in the completion: %s",
    vim.inspect(ids))
  check(vim.tbl_contains(vim.fn.getcompletion("CairnUndo rebase", "cmdline"), first),
    "completion by title lacks %s", first)

  -- :CairnUndo without an id: a titled picker, newest first; choosing undoes it and says so
  vim.cmd("edit " .. vim.fn.fnameescape(target)) -- the accepted file is open while it is undone
  local picked = nil
  vim.ui.select = function(items, opts, on_choice)
    if opts.kind == "cairn.proposal" then
      picked = { prompt = opts.prompt, items = items }
      for _, item in ipairs(items) do
        if item.id == first then
          return on_choice(item)
        end
      end
    end
    return on_choice(nil)
  end
  clear(messages)
  vim.v.errmsg = ""
  vim.cmd("CairnUndo")
  wait_for("the undo's message", function() return notified("^cairn: undone: " .. first .. " undone") end)
  vim.ui.select = select
  check(picked.prompt:match("^cairn: undo which decision"), "picker prompt: %s", picked.prompt)
  check(#picked.items >= 2 and picked.items[1].id ~= first, "picker rows not newest first: %s",
    vim.inspect(vim.tbl_map(function(r) return r.id end, picked.items)))
  check(read(target) == before, "the undo did not restore %s", proposal.target)
  check(not vim.v.errmsg:match("E211"), "undo left %s", vim.v.errmsg)

  -- the other views: History newest first with the undone row, Journal, Jobs, Memories; <CR> shows a diff
  vim.api.nvim_set_current_buf(cockpit)
  vim.cmd("normal H")
  wait_for("the History view", function()
    return buffer_has(cockpit, "[History (newest first)]") and line_of(cockpit, first) ~= nil
  end)
  check(buffer_has(cockpit, "undone"), "History lacks the undone decision")
  write(out .. "/cockpit-history", table.concat(vim.api.nvim_buf_get_lines(cockpit, 0, -1, false), "\n"))
  vim.api.nvim_win_set_cursor(0, { line_of(cockpit, first), 0 })
  vim.cmd("execute \"normal \\<CR>\"")
  wait_for("the diff buffer", function() return vim.api.nvim_buf_get_name(0) == "cairn://proposal/" .. first end)
  vim.cmd("close")
  -- in History: `a` accepts an undone proposal again, `u` on a rejection takes it back (asks first)
  vim.api.nvim_set_current_buf(cockpit)
  check(line_of(cockpit, first) and vim.api.nvim_buf_get_lines(cockpit, 0, -1, false)[line_of(cockpit, first)]
    :find("a: accept again", 1, true), "the undone row offers no accept again")
  vim.api.nvim_win_set_cursor(0, { line_of(cockpit, first), 0 })
  vim.cmd("normal a")
  wait_for("the accept again", function() return notified("^cairn: accepted: " .. first .. " applied") end)
  check(read(target) == after, "accepting %s again did not write it again", first)
  wait_for("History to show the new decision", function()
    local row = line_of(cockpit, first)
    return row and vim.api.nvim_buf_get_lines(cockpit, 0, -1, false)[row]:find("u: undo", 1, true)
  end)
  vim.api.nvim_win_set_cursor(0, { line_of(cockpit, third), 0 })
  asked = nil
  vim.ui.select = function(items, opts, on_choice)
    asked = opts.prompt
    on_choice(items[1])
  end
  vim.cmd("normal u")
  wait_for("the rejection taken back", function()
    return notified("^cairn: rejection taken back: " .. third .. " pending")
  end)
  vim.ui.select = select
  check(asked and asked:match("^cairn: take back the rejection of " .. third), "prompt: %s", tostring(asked))
  vim.cmd("normal P")
  wait_for("the proposal pending again", function()
    return buffer_has(cockpit, "[Pending]") and line_of(cockpit, third) ~= nil
  end)
  for _, view in ipairs({ { "L", "[Journal]" }, { "J", "[Jobs]" }, { "M", "[Memories]" } }) do
    local key, title = view[1], view[2]
    vim.api.nvim_set_current_buf(cockpit)
    vim.cmd("normal " .. key)
    wait_for(title, function()
      return buffer_has(cockpit, title) and drawn(cockpit)
    end)
    local shown = table.concat(vim.api.nvim_buf_get_lines(cockpit, 0, -1, false), "\n")
    check(not buffer_has(cockpit, "error: "), "%s shows an error: %s", title, shown)
    write(out .. "/cockpit-" .. key, shown)
  end
  check(lists_topic(cockpit, "/the%-ci%-cache%-is%-keyed[^/]*%.md$"), "Memories lacks the edited topic")

  -- messages: a review is queued (not "done"), decisions through the Lua API name their ids
  clear(messages)
  cairn.command("cairn.review", {})
  wait_for("the review's message", function() return notified("^cairn: review queued") end)
  vim.cmd("CairnReview")
  wait_for(":CairnReview's message", function()
    return #vim.tbl_filter(function(m) return m:match("^cairn: review queued") ~= nil end, messages) == 2
  end)
  cairn.command("cairn.reject", { ids = { third } })
  wait_for("the API reject's message", function() return notified("^cairn: rejected: " .. third .. " rejected") end)
  cairn.command("cairn.unreject", { ids = { third } })
  wait_for("the API unreject's message", function()
    return notified("^cairn: rejection taken back: " .. third .. " pending")
  end)
  check(not notified(" done$"), "a message says done: %s", vim.inspect(messages))
  -- the queued reviews finish before the server stops
  local idle = false
  local function poll()
    cairn.request("cairn/jobs", {}, function(e, answer)
      local busy = vim.tbl_filter(function(job)
        return job.kind == "review" and (job.state == "idle" or job.state == "running")
      end, type(answer) == "table" and answer.jobs or {})
      if e == nil and #busy == 0 then
        idle = true
      else
        vim.defer_fn(poll, 100)
      end
    end)
  end
  poll()
  wait_for("the reviews to finish", function() return idle end)

  -- :checkhealth cairn
  vim.cmd("checkhealth cairn")
  local report = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  write(out .. "/checkhealth", report)
  check(report:match("OK:? `cairn` found"), "checkhealth: %s", report)
  check(report:match("OK:? version: cairn"), "checkhealth: %s", report)
  check(report:match("OK:? the server starts"), "checkhealth: %s", report)
  check(not report:match("ERROR"), "checkhealth: %s", report)
  vim.cmd("tabclose")

  -- :help cairn (helptags generated for a copy of doc/)
  local doc = os.getenv("CAIRN_TEST_DOC")
  vim.opt.runtimepath:append(vim.fn.fnamemodify(doc, ":h"))
  vim.cmd("helptags " .. vim.fn.fnameescape(doc))
  for _, tag in ipairs({ "cairn", ":CairnUndo", "cairn-cockpit", "cairn-statusline", "cairn-setup" }) do
    vim.cmd("help " .. tag)
    check(vim.fn.expand("%:t") == "cairn.txt", ":help %s opened %s", tag, vim.fn.expand("%:t"))
    vim.cmd("helpclose")
  end
  check(#errors == 0, "error messages: %s", vim.inspect(errors))
end

harness.run("plugin", main)
