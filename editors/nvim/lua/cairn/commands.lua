-- cairn: user commands, pickers and completion.  Loading this module is
-- cheap (plugin/cairn.lua defines the commands with it); the server and the
-- other modules load when a command runs.
local config = require("cairn.config")

local M = {}

local function lsp()
  return require("cairn.lsp")
end

local function status()
  return require("cairn.status")
end

local function err_notify(err)
  config.notify(config.error_text(err), vim.log.levels.ERROR)
end

local function root()
  return config.root_of_buf(0)
end

--- Run cairn command `name` with its argument object in `ws` (the current
--- buffer's workspace); `on_result(err, answer)`.
function M.execute(ws, name, argument, on_result)
  argument = argument or {}
  argument.workspace = argument.workspace or ws
  return lsp().request(ws, "workspace/executeCommand", { command = name, arguments = { argument } }, on_result)
end

-- Rows of a cockpit view, sorted: pending by id, decided newest first.
function M.sort_rows(view, rows)
  rows = rows or {}
  if view == "history" and not (rows[1] and rows[1].seq ~= nil) then -- a reflog comes newest first already
    table.sort(rows, function(a, b)
      local da, db = tostring(a.decided or ""), tostring(b.decided or "")
      if da ~= db then
        return da > db
      end
      return tostring(a.id) > tostring(b.id)
    end)
  end
  return rows
end

--- The proposals of `view` ("candidates" or "history") now, or {} (for
--- completion: waits for the server at most a few seconds).
function M.rows_sync(view, ws)
  ws = ws or root()
  local client = lsp().client_sync(ws, 5000)
  if not client then
    return {}
  end
  local answer = lsp().call(client, "request_sync", "cairn/cockpit", { workspace = ws, view = view }, 5000, 0)
  return (answer and type(answer.result) == "table") and M.sort_rows(view, answer.result) or {}
end

--- Whether a decided row can be undone now.
function M.undoable(row)
  if row.canUndo ~= nil then
    return row.canUndo == true
  end
  return row.state == "applied"
end

-- Completion over proposals by id or title: an id starting with the typed
-- text, or a title containing it (case-insensitive), completes to the id.
local function complete_rows(rows, arglead)
  local out, seen, lead = {}, {}, arglead:lower()
  for _, row in ipairs(rows) do
    if type(row.id) == "string" and not seen[row.id] and (row.id:sub(1, #arglead) == arglead
        or (lead ~= "" and tostring(row.title or ""):lower():find(lead, 1, true))) then
      table.insert(out, row.id)
      seen[row.id] = true
    end
  end
  return out
end

function M.complete_pending(arglead)
  return complete_rows(M.rows_sync("candidates"), arglead)
end

function M.complete_decided(arglead)
  local rows = {}
  for _, row in ipairs(M.rows_sync("history")) do
    if M.undoable(row) then
      table.insert(rows, row)
    end
  end
  return complete_rows(rows, arglead)
end

function M.complete_view(arglead)
  return vim.tbl_filter(function(v)
    return v:sub(1, #arglead) == arglead
  end, { "pending", "history", "journal", "jobs", "memories" })
end

local function label(row)
  return string.format("%s  %-8s %s  (%s)", row.id, row.state or "?", row.title or "", row.target or "?")
end

--- Pick one proposal of `view` with vim.ui.select (titled `prompt`); `on_pick(row)`.
--- `keep(row)` filters; `empty` is the message when nothing is left.
function M.pick(ws, view, prompt, keep, empty, on_pick)
  lsp().request(ws, "cairn/cockpit", { view = view }, function(err, rows)
    if err then
      return err_notify(err)
    end
    local choices = {}
    for _, row in ipairs(M.sort_rows(view, rows)) do
      if not keep or keep(row) then
        table.insert(choices, row)
      end
    end
    if #choices == 0 then
      return config.notify(empty)
    end
    vim.ui.select(choices, { prompt = prompt, format_item = label, kind = "cairn.proposal" }, function(row)
      if row then
        on_pick(row)
      end
    end)
  end)
end

local function is_under(path, ws)
  return path == ws or path:sub(1, #ws + 1) == ws .. "/"
end

-- Whether buffer `buf`'s text differs from the bytes of its file `path` (a file that cannot be read: no).
local function differs(buf, path)
  local f = io.open(path, "rb")
  if not f then
    return false
  end
  local data = f:read("*a")
  f:close()
  local text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
  if vim.bo[buf].eol then
    text = text .. "\n"
  end
  return text ~= data
end

-- Reload unmodified buffer `buf` from its file, silently: `:edit!` in the buffer (no W13 "file has been
-- created after editing started" dialog for a buffer opened before its file existed, no W11 either).
local function reload_buf(buf)
  return pcall(vim.api.nvim_buf_call, buf, function()
    vim.cmd("silent keepalt keepjumps edit!")
  end)
end
M.reload_buf = reload_buf

--- Reload the buffers of `ws` whose files a decision rewrote or removed
--- (unmodified buffers only; a modified one keeps the user's text, and an
--- accept over it is refused by the server).  `written`: the files the
--- decision wrote (workspace-relative or absolute), when known.  A written
--- file, or a memory file whose text differs from the disk, is reloaded with
--- `:edit!` (silently, also when the file did not exist when the buffer was
--- opened); other buffers get `:checktime`.  Returns the names of the files
--- that no longer exist.
function M.reload(ws, written)
  local gone, wrote = {}, {}
  for _, path in ipairs(type(written) == "table" and written or {}) do
    if type(path) == "string" then
      wrote[path:sub(1, 1) == "/" and path or (ws .. "/" .. path)] = true
    end
  end
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    local name = vim.api.nvim_buf_get_name(buf)
    if vim.api.nvim_buf_is_loaded(buf) and name ~= "" and vim.bo[buf].buftype == "" and is_under(name, ws) then
      if vim.loop.fs_stat(name) then
        if not vim.bo[buf].modified then
          if wrote[name] or (config.is_memory_file(name) and differs(buf, name)) then
            reload_buf(buf)
          else
            pcall(vim.cmd, "checktime " .. buf)
          end
        end
      elseif not vim.bo[buf].modified then
        -- the decision removed the file (an undo of a new topic): its buffer goes too
        table.insert(gone, vim.fn.fnamemodify(name, ":~:."))
        pcall(vim.api.nvim_buf_delete, buf, { force = true })
      end
    end
  end
  return gone
end

local VERBS = { ["cairn.accept"] = "accepted", ["cairn.reject"] = "rejected", ["cairn.undo"] = "undone",
  ["cairn.acceptEdited"] = "accepted as edited", ["cairn.unreject"] = "rejection taken back" }

-- The decisions of a decision command's answer ({status, result = {decisions} or one decision}), or {}.
local function decisions_of(answer)
  local result = type(answer) == "table" and answer.result or nil
  if type(result) ~= "table" then
    return {}
  end
  if type(result.decisions) == "table" then
    return result.decisions
  end
  return result.id and { result } or {}
end

--- The files the decisions of `answer` wrote (workspace-relative).
function M.written(answer)
  local out = {}
  for _, d in ipairs(decisions_of(answer)) do
    for _, path in ipairs(type(d.written) == "table" and d.written or {}) do
      table.insert(out, path)
    end
  end
  return out
end

--- The ids a decision command's argument names (`ids`, or `id`), or {}.
function M.ids_of(argument)
  if type(argument) ~= "table" then
    return {}
  end
  if type(argument.ids) == "table" then
    return argument.ids
  end
  return argument.id and { argument.id } or {}
end

--- What a decision did, for the user: "accepted: p1 applied (.agents/memory/x.md)".  `ids`: the ids asked
--- for, named when the answer lists no decision.
function M.decision_message(command, answer, ids)
  local parts = {}
  for _, d in ipairs(decisions_of(answer)) do
    local text = tostring(d.id) .. (d.changed == false and (" was " .. tostring(d.state) .. " already")
      or (" " .. tostring(d.state)))
    if type(d.written) == "table" and #d.written > 0 then
      text = text .. " (" .. table.concat(d.written, ", ") .. ")"
    end
    if type(d.supersedes) == "string" then
      text = text .. ", replacing " .. d.supersedes
    end
    table.insert(parts, text)
  end
  if #parts == 0 and ids and #ids > 0 then
    parts = { table.concat(vim.tbl_map(tostring, ids), ", ") }
  end
  return (VERBS[command] or command) .. ": " .. (#parts > 0 and table.concat(parts, "; ") or "nothing decided")
end

--- After a decision on `ws` (`ids` asked for): reload its buffers, say what happened, refresh the views.
function M.after_decision(ws, command, answer, ids)
  local gone = M.reload(ws, M.written(answer))
  local msg = M.decision_message(command, answer, ids)
  if #gone > 0 then
    msg = msg .. "; removed " .. table.concat(gone, ", ")
  end
  config.notify(msg)
  status().schedule(ws)
end

--- What `cairn.remember` did, for the user: each proposal made for the text ("p1 pending: title"),
--- else whether it was reviewed (nothing new) or queued (its proposal follows from the review running now).
function M.remember_message(answer)
  local result = type(answer) == "table" and type(answer.result) == "table" and answer.result or {}
  local lines = {}
  for _, p in ipairs(type(result.proposals) == "table" and result.proposals or {}) do
    table.insert(lines, string.format("%s %s: %s", tostring(p.id), tostring(p.state), tostring(p.title)))
  end
  if #lines == 0 then
    table.insert(lines, result.reviewed and "remembered; no new proposal (memory holds it, or it was rejected)"
      or ("remembered; queued for review" .. (type(result.remember) == "string" and (" (" .. result.remember .. ")")
        or "") .. ": its proposal follows from the review running now"))
  end
  return table.concat(lines, "\n")
end

--- What `cairn.wireAgents` (the "Wire AGENT to read cairn memory" quick fix) did, for the user: the
--- proposal(s) made, to accept like any other, and each refusal with its code and message.
function M.wire_message(answer)
  local r = type(answer) == "table" and type(answer.result) == "table" and answer.result or {}
  local parts = {}
  for _, p in ipairs(type(r.proposals) == "table" and r.proposals or {}) do
    if p.new == false then
      table.insert(parts, string.format("pending already: %s (%s)", tostring(p.id), tostring(p.title)))
    else
      table.insert(parts, string.format("proposed %s (%s), to accept in the cockpit", tostring(p.id),
        tostring(p.title)))
    end
  end
  for _, x in ipairs(type(r.refused) == "table" and r.refused or {}) do
    table.insert(parts, string.format("refused %s: %s", tostring(x.code), tostring(x.message or x.target)))
  end
  if type(r.wired) == "table" and #r.wired > 0 then
    table.insert(parts, "reading the memory already: " .. table.concat(vim.tbl_map(function(w)
      return type(w) == "table" and tostring(w.target or vim.inspect(w)) or tostring(w)
    end, r.wired), ", "))
  end
  return "wire: " .. (#parts > 0 and table.concat(parts, "; ") or "nothing to propose")
end

--- What a command other than a decision did, for the user (`cairn.review` is queued, not done;
--- `cairn.remember` names its proposals or says it was queued).
function M.command_message(name, answer)
  if name == "cairn.remember" then
    return M.remember_message(answer)
  end
  if name == "cairn.wireAgents" then
    return M.wire_message(answer)
  end
  if name == "cairn.review" then
    return "review queued" .. (type(answer) == "table" and type(answer.jobId) == "string"
      and (" (" .. answer.jobId .. ")") or "") .. "; its proposals show when it finishes"
  end
  return name .. " done"
end

--- The callback of a decision command: the error shown, or the views refreshed; then `on_done`.
local function decided(ws, name, ids, on_done)
  return function(err, answer)
    if err then
      err_notify(err)
    else
      M.after_decision(ws, name, answer, ids)
    end
    if on_done then
      on_done(err, answer)
    end
  end
end

--- Decide: "accept", "reject", "unreject" (ids) or "undo" (one id) in `ws`; `on_done(err, answer)` after the follow-up.
--- `keep_both` (accept only): even where memory now says otherwise on a proposal's subject (ADR 0025).
function M.decide(ws, action, ids, on_done, keep_both)
  local name, argument = "cairn." .. action, { ids = ids }
  if action == "undo" then
    argument = { id = ids[1] }
  elseif action == "accept" and keep_both then
    argument.keepBoth = true
  end
  return M.execute(ws, name, argument, decided(ws, name, ids, on_done))
end

--- Accept `id` with `text` instead of its proposed content (edit before accept).
function M.accept_edited(ws, id, text, on_done)
  return M.execute(ws, "cairn.acceptEdited", { id = id, text = text },
    decided(ws, "cairn.acceptEdited", { id }, on_done))
end

local function confirm_reject(rows, on_yes)
  local what = #rows == 1 and (rows[1].id .. " (" .. tostring(rows[1].title or "") .. ")")
    or (#rows .. " proposals")
  vim.ui.select({ "Reject", "Keep pending" }, {
    prompt = "cairn: reject " .. what .. "? Later reviews will not propose it again",
    kind = "cairn.confirm",
  }, function(choice)
    if choice == "Reject" then
      on_yes()
    end
  end)
end
M.confirm_reject = confirm_reject

local function confirm_unreject(row, on_yes)
  vim.ui.select({ "Take back", "Keep rejected" }, {
    prompt = "cairn: take back the rejection of " .. row.id .. " (" .. tostring(row.title or "")
      .. ")? It is pending again",
    kind = "cairn.confirm",
  }, function(choice)
    if choice == "Take back" then
      on_yes()
    end
  end)
end
M.confirm_unreject = confirm_unreject

-- :CairnUnreject [ID] (no id: a picker over the rejections that can be taken back)
function M.unreject(a)
  local ws = root()
  if a.args ~= "" then
    return M.decide(ws, "unreject", { a.args })
  end
  M.pick(ws, "history", "cairn: take back which rejection? (newest first)", function(row)
    return row.canUnreject == true
  end, "no rejection to take back in " .. vim.fn.fnamemodify(ws, ":~"), function(row)
    M.decide(ws, "unreject", { row.id })
  end)
end

function M.complete_rejected(arglead)
  return complete_rows(vim.tbl_filter(function(row)
    return row.canUnreject == true
  end, M.rows_sync("history")), arglead)
end

local function confirm_undo(row, on_yes)
  vim.ui.select({ "Undo", "Keep" }, {
    prompt = "cairn: undo " .. row.id .. " (" .. tostring(row.title or "") .. ")? Its files return to before",
    kind = "cairn.confirm",
  }, function(choice)
    if choice == "Undo" then
      on_yes()
    end
  end)
end
M.confirm_undo = confirm_undo

-- :CairnAccept [ID...] (no id: a picker)
function M.accept(a)
  local ws = root()
  if #a.fargs > 0 then
    return M.decide(ws, "accept", a.fargs)
  end
  M.pick(ws, "candidates", "cairn: accept which proposal?", nil, "no pending proposals", function(row)
    M.decide(ws, "accept", { row.id })
  end)
end

-- :CairnReject [ID...] (no id: a picker, then a confirmation)
function M.reject(a)
  local ws = root()
  if #a.fargs > 0 then
    return M.decide(ws, "reject", a.fargs)
  end
  M.pick(ws, "candidates", "cairn: reject which proposal?", nil, "no pending proposals", function(row)
    confirm_reject({ row }, function()
      M.decide(ws, "reject", { row.id })
    end)
  end)
end

-- :CairnUndo [ID] (no id: a picker over the decisions that can be undone, newest first)
function M.undo(a)
  local ws = root()
  if a.args ~= "" then
    return M.decide(ws, "undo", { a.args })
  end
  M.pick(ws, "history", "cairn: undo which decision? (newest first)", M.undoable,
    "nothing to undo: no accepted proposal in " .. vim.fn.fnamemodify(ws, ":~"), function(row)
      M.decide(ws, "undo", { row.id })
    end)
end

-- :CairnShow [ID]
function M.show(a)
  local ws = root()
  local function show(id)
    lsp().request(ws, "cairn/proposal", { id = id }, function(err, result)
      if err then
        return err_notify(err)
      end
      require("cairn.cockpit").show_diff(result, ws)
    end)
  end
  if a.args ~= "" then
    return show(a.args)
  end
  M.pick(ws, "candidates", "cairn: show which proposal?", nil, "no pending proposals", function(row)
    show(row.id)
  end)
end

-- :CairnEdit [ID]: edit a pending proposal's new content, then :w accepts it
function M.edit(a)
  local ws = root()
  if a.args ~= "" then
    return require("cairn.cockpit").edit(ws, a.args)
  end
  M.pick(ws, "candidates", "cairn: edit which proposal before accepting?", nil, "no pending proposals",
    function(row)
      require("cairn.cockpit").edit(ws, row.id)
    end)
end

function M.status_command()
  local ws = root()
  status().status(ws, function(err, st)
    if err then
      return err_notify(err)
    end
    config.notify(status().summary(st))
  end)
end

function M.proposals_command()
  local ws = root()
  status().proposals(ws, function(items)
    if not items then
      return
    end
    if #items == 0 then
      config.notify("no pending proposals (the quickfix list fills as they come)")
    else
      vim.cmd("copen")
    end
  end)
end

function M.drain()
  local ws = root()
  M.execute(ws, "cairn.drainBacklog", {}, function(err)
    if err then
      err_notify(err)
    end
  end)
end

function M.review()
  local ws = root()
  M.execute(ws, "cairn.review", {}, function(err, answer)
    if err then
      return err_notify(err)
    end
    config.notify(M.command_message("cairn.review", answer))
  end)
end

--- What `cairn.verify` found, for the user: topics checked, stale, proposals made, and the stale lines
--- of the instruction files (warnings in those files when open; `cairn verify` lists them).
function M.verify_message(answer)
  local r = type(answer) == "table" and type(answer.result) == "table" and answer.result or {}
  local proposals = type(r.proposals) == "table" and #r.proposals or 0
  local lines = tonumber(r.staleInstructionLines) or 0
  return string.format("verified %d topic(s): %d stale, %d proposal(s)%s%s", tonumber(r.checked) or 0,
    tonumber(r.stale) or 0, proposals, proposals > 0 and " (in the cockpit's Pending view)" or "",
    lines > 0 and string.format("; %d stale line(s) in instruction files (marked in those files; "
      .. "cairn verify lists them)", lines) or "")
end

-- Run a memory-topic command `name` in `ws`: on success the message `say(result)` and the cockpits
-- refreshed, on failure the error; then `on_done(err, answer)`.
local function topic_command(ws, name, argument, say, on_done)
  M.execute(ws, name, argument, function(err, answer)
    if err then
      err_notify(err)
    else
      config.notify(say(type(answer) == "table" and type(answer.result) == "table" and answer.result or {}))
      require("cairn.cockpit").refresh_root(ws)
    end
    if on_done then
      on_done(err, answer)
    end
  end)
end

--- Recheck what every memory topic cites (`cairn.verify`) in `ws`; the message, then the cockpits
--- refreshed; `on_done(err, answer)`.
function M.verify(ws, on_done)
  ws = type(ws) == "string" and ws or root()
  topic_command(ws, "cairn.verify", {}, function(r)
    return M.verify_message({ result = r })
  end, on_done)
end

--- Ask to retire memory topic `row` (a Memories row), then propose its retirement (`cairn.retireTopic`).
function M.retire_topic(ws, row, on_done)
  vim.ui.select({ "Propose its retirement", "Keep it" }, {
    prompt = "cairn: retire " .. tostring(row.file) .. " (" .. tostring(row.name or "") .. ")? "
      .. "A proposal to accept, like any other",
    kind = "cairn.confirm",
  }, function(choice)
    if choice == "Propose its retirement" then
      topic_command(ws, "cairn.retireTopic", { file = row.file }, function(r)
        return string.format("%s: retirement %s %s", tostring(row.file), tostring(r.proposal or "?"),
          r.new == false and "was already pending" or "proposed (in the Pending view)")
      end, on_done)
    end
  end)
end

--- Confirm memory topic `row` is still true (`cairn.confirmTopic`); a stale topic is refused (E_TOPIC_STALE).
function M.confirm_topic(ws, row, on_done)
  topic_command(ws, "cairn.confirmTopic", { file = row.file }, function(r)
    return string.format("%s: confirmed %s", tostring(row.file), tostring(r.confirmed or ""))
  end, on_done)
end

-- :CairnRemember [type=TYPE] [TEXT]: TEXT, else the lines of the range
function M.remember_command(a)
  local args = vim.deepcopy(a.fargs)
  local note_type
  if args[1] and args[1]:match("^type=") then
    note_type = table.remove(args, 1):sub(6)
  end
  local text = table.concat(args, " ")
  if text == "" and a.range > 0 then
    text = table.concat(vim.api.nvim_buf_get_lines(0, a.line1 - 1, a.line2, false), "\n")
  end
  require("cairn").remember(text, note_type)
end

M.specs = {
  { "Cairn", function(a) require("cairn.cockpit").open(nil, a.args ~= "" and a.args or nil) end,
    { nargs = "?", complete = M.complete_view, desc = "cairn: the cockpit (pending, history, journal, jobs)" } },
  { "CairnAccept", M.accept, { nargs = "*", complete = M.complete_pending, desc = "cairn: accept proposals" } },
  { "CairnReject", M.reject, { nargs = "*", complete = M.complete_pending, desc = "cairn: reject proposals" } },
  { "CairnUndo", M.undo, { nargs = "?", complete = M.complete_decided, desc = "cairn: undo a decision" } },
  { "CairnUnreject", function(a) M.unreject(a) end,
    { nargs = "?", complete = function(l) return M.complete_rejected(l) end, desc = "cairn: take a rejection back" } },
  { "CairnShow", M.show, { nargs = "?", complete = M.complete_pending, desc = "cairn: a proposal's diff" } },
  { "CairnEdit", M.edit, { nargs = "?", complete = M.complete_pending, desc = "cairn: edit, then accept" } },
  { "CairnProposals", M.proposals_command, { desc = "cairn: pending proposals in the quickfix list" } },
  { "CairnDrain", M.drain, { desc = "cairn: drain the backlog" } },
  { "CairnReview", M.review, { desc = "cairn: queue a review" } },
  { "CairnVerify", function() M.verify() end, { desc = "cairn: recheck what the memory cites" } },
  { "CairnStatus", M.status_command, { desc = "cairn: status counts" } },
  { "CairnRemember", M.remember_command, { nargs = "*", range = true, desc = "cairn: remember a text" } },
  { "CairnMessages", function() M.messages_command() end, { desc = "cairn: the last messages in full" } },
}

-- :CairnMessages: the full text of cairn's last messages (the echo area cuts them to one line)
function M.messages_command()
  local buf = vim.api.nvim_create_buf(false, true)
  local lines = {}
  for _, m in ipairs(config.recent) do
    vim.list_extend(lines, vim.split(m, "\n", { plain = true }))
  end
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, #lines > 0 and lines or { "cairn: no message yet" })
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].modifiable = false
  vim.cmd("botright split")
  vim.api.nvim_win_set_buf(0, buf)
  vim.api.nvim_win_set_height(0, math.min(#lines + 1, 12))
  vim.wo.wrap = true
  vim.keymap.set("n", "q", "<cmd>close<cr>", { buffer = buf, nowait = true })
end

--- Attach memory files (`.agents/memory/*.md`, `MEMORY.md`, the instruction
--- files) to their workspace's server when they are read or created.
function M.define_autocmds()
  local group = vim.api.nvim_create_augroup("cairn", { clear = true })
  vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile" }, {
    group = group,
    pattern = "*.md",
    callback = function(args)
      local path = vim.api.nvim_buf_get_name(args.buf)
      if config.is_memory_file(path) then
        lsp().attach(args.buf, config.root_of(path))
      end
    end,
  })
end

--- Define the user commands and the autocommands (plugin/cairn.lua and setup() call this).
function M.define()
  M.define_autocmds()
  for _, spec in ipairs(M.specs) do
    local name, fn, extra = spec[1], spec[2], spec[3]
    vim.api.nvim_create_user_command(name, function(a)
      local ok, e = xpcall(fn, debug.traceback, a)
      if not ok then
        config.notify(name .. " failed: " .. tostring(e):match("^[^\n]*"), vim.log.levels.ERROR)
      end
    end, vim.tbl_extend("force", { desc = "cairn" }, extra))
  end
end

return M
