-- cairn: the statusline component and the quickfix list of pending
-- proposals, both refreshed when the server reports a change (a job's finish
-- line, new diagnostics, a drain's end) and after this editor's decisions.
local config = require("cairn.config")
local lsp = require("cairn.lsp")

local M = {}

M.last = {} -- root -> last cairn/status answer
local qf_id = nil -- the quickfix list :CairnProposals made (refreshed in place)
local scheduled = {} -- root -> true while a refresh waits (a burst of news refreshes once)

--- Statusline component: "cairn:N" with N pending proposals, "cairn" with a
--- server and none pending, "" without a cairn server for this buffer's workspace.
function M.statusline()
  local client = lsp.client(0)
  if not client or lsp.is_stopped(client) then
    return ""
  end
  local st = M.last[client.config.root_dir]
  if st and type(st.proposals) == "number" and st.proposals > 0 then
    return "cairn:" .. st.proposals
  end
  return "cairn"
end

--- `cairn/status` of `root`; `on_result(err, st)`.  The answer is kept for the statusline.
function M.status(root, on_result)
  return lsp.request(root, "cairn/status", {}, function(err, st)
    if not err and type(st) == "table" then
      M.last[root] = st
      if st.workspace then
        M.last[st.workspace] = st
      end
      vim.cmd("redrawstatus!")
    end
    on_result(err, st)
  end)
end

--- The one-line summary :CairnStatus shows.
function M.summary(st)
  return string.format("%d proposals, %s mode | pending %d running %d retry %d attention %d exhausted %d digests %d",
    st.proposals or 0, tostring(st.mode or "?"), st.pending or 0, st.running or 0, st.retryWaiting or 0,
    st.attention or 0, st.exhausted or 0, st.digests or 0)
end

local function qf_items(root, rows)
  local items = {}
  for _, row in ipairs(rows or {}) do
    local target = tostring(row.target or "")
    table.insert(items, {
      filename = target:sub(1, 1) == "/" and target or (root .. "/" .. target),
      lnum = 1,
      text = string.format("%s [%s %s] %s", row.id, row.kind or "?", row.state or "?", row.title or ""),
    })
  end
  return items
end

local function qf_alive()
  return qf_id ~= nil and vim.fn.getqflist({ id = qf_id }).id == qf_id
end

--- Fill a quickfix list with `root`'s pending proposals (one entry each, at
--- its target); it is refreshed in place later.  `on_done(items)` or nil on error.
function M.proposals(root, on_done)
  return lsp.request(root, "cairn/cockpit", { view = "candidates" }, function(err, rows)
    if err then
      config.notify(config.error_text(err), vim.log.levels.ERROR)
      return on_done and on_done(nil, err)
    end
    local items = qf_items(root, rows)
    local what = { title = "cairn proposals", items = items, context = { cairn_root = root } }
    if qf_alive() then
      what.id = qf_id
      vim.fn.setqflist({}, "r", what)
    else
      vim.fn.setqflist({}, " ", what)
      qf_id = vim.fn.getqflist({ id = 0 }).id
    end
    if on_done then
      on_done(items)
    end
  end)
end

local function refresh_qf(root)
  if not qf_alive() then
    return
  end
  local ctx = vim.fn.getqflist({ id = qf_id, context = 0 }).context
  if type(ctx) == "table" and ctx.cairn_root ~= nil and ctx.cairn_root ~= root then
    return
  end
  local client = lsp.client_of_root(root)
  if not client then
    return
  end
  M.proposals(root)
end

--- Refresh now what shows `root`'s state (statusline, quickfix, cockpit) without starting a server.
function M.refresh(root)
  local client = lsp.client_of_root(root)
  if not client then
    M.last[root] = nil
    vim.cmd("redrawstatus!")
    return
  end
  M.status(root, function(err)
    if not err then
      pcall(vim.api.nvim_exec_autocmds, "User", { pattern = "CairnStatusChanged", modeline = false })
    end
  end)
  refresh_qf(root)
  local ok, cockpit = pcall(require, "cairn.cockpit")
  if ok then
    cockpit.refresh_root(root)
  end
end

--- Refresh `root`'s views soon, once for a burst of server news.
function M.schedule(root)
  if not root or scheduled[root] then
    return
  end
  scheduled[root] = true
  vim.defer_fn(function()
    scheduled[root] = nil
    M.refresh(root)
  end, 100)
end

table.insert(lsp.listeners, function(root)
  M.schedule(root)
end)

return M
