-- :checkhealth cairn: the cairn program, its version, and a server that starts.
local config = require("cairn.config")

local M = {}

-- vim.health (0.9+) or the 0.7/0.8 `health` module.
local function reporter()
  local h = vim.health or require("health")
  return {
    start = h.start or h.report_start,
    ok = h.ok or h.report_ok,
    info = h.info or h.report_info,
    warn = h.warn or h.report_warn,
    error = h.error or h.report_error,
  }
end

local function frame(msg)
  local body = vim.fn.json_encode(msg)
  return "Content-Length: " .. #body .. "\r\n\r\n" .. body
end

-- Start the server, send `initialize`, wait for its answer (at most `timeout` ms), then end it.
-- Returns the initialize result, or nil and a reason.
function M.handshake(cmd, root, timeout)
  local buffer, result, failure = "", nil, nil
  local ok, job = pcall(vim.fn.jobstart, cmd, {
    env = config.opts.cmd_env,
    on_stdout = function(_, data)
      buffer = buffer .. table.concat(data, "\n")
      local header_end = buffer:find("\r\n\r\n", 1, true)
      local len = buffer:match("Content%-Length: (%d+)")
      if header_end and len and #buffer >= header_end + 3 + tonumber(len) then
        local body = buffer:sub(header_end + 4, header_end + 3 + tonumber(len))
        local decoded_ok, msg = pcall(vim.fn.json_decode, body)
        if decoded_ok and type(msg) == "table" and msg.id == 1 then
          result = msg.result or vim.NIL
          if msg.error then
            failure = tostring(msg.error.message)
          end
        end
        buffer = buffer:sub(header_end + 4 + tonumber(len))
      end
    end,
    on_exit = function(_, code)
      failure = failure or ("the server exited with code " .. tostring(code))
    end,
  })
  if not ok or job <= 0 then
    return nil, "cannot run " .. table.concat(cmd, " ")
  end
  vim.fn.chansend(job, frame({ jsonrpc = "2.0", id = 1, method = "initialize", params = {
    processId = vim.fn.getpid(), rootUri = vim.uri_from_fname(root), capabilities = vim.empty_dict(),
    workspaceFolders = { { uri = vim.uri_from_fname(root), name = vim.fn.fnamemodify(root, ":t") } },
  } }))
  vim.wait(timeout, function()
    return result ~= nil or failure ~= nil
  end, 20)
  -- end it: shutdown, exit, then stop whatever is left
  pcall(vim.fn.chansend, job, frame({ jsonrpc = "2.0", id = 2, method = "shutdown" }))
  pcall(vim.fn.chansend, job, frame({ jsonrpc = "2.0", method = "exit" }))
  if vim.fn.jobwait({ job }, 5000)[1] == -1 then
    vim.fn.jobstop(job)
  end
  if result ~= nil and result ~= vim.NIL then
    return result
  end
  return nil, failure or string.format("no answer to initialize within %d ms", timeout)
end

function M.check()
  local h = reporter()
  h.start("cairn")
  if vim.fn.has("nvim-0.7") == 1 then
    h.ok("Neovim 0.7 or later")
  else
    h.error("Neovim 0.7 or later is needed")
  end
  local cmd = config.opts.cmd
  local program = cmd[1]
  if vim.fn.executable(program) ~= 1 then
    h.error("`" .. program .. "` not found", { "install cairn (pip install -e . in a cairn checkout) or set cmd in "
      .. "require('cairn').setup{ cmd = { '/path/to/cairn', 'serve' } }" })
    return
  end
  h.ok("`" .. program .. "` found: " .. vim.fn.exepath(program))
  local version_cmd = vim.deepcopy(cmd)
  if version_cmd[#version_cmd] == "serve" then
    version_cmd[#version_cmd] = "--version"
  else
    table.insert(version_cmd, "--version")
  end
  local out = vim.fn.system(version_cmd)
  if vim.v.shell_error == 0 then
    h.ok("version: " .. vim.trim(out))
  else
    h.warn("`" .. table.concat(version_cmd, " ") .. "` failed: " .. vim.trim(out):sub(1, 200))
  end
  local root = config.root_of_buf(0)
  local result, reason = M.handshake(cmd, root, 15000)
  if result then
    local info = type(result.serverInfo) == "table" and result.serverInfo or {}
    h.ok(string.format("the server starts: %s %s for %s", tostring(info.name or "cairn"),
      tostring(info.version or "?"), vim.fn.fnamemodify(root, ":~")))
  else
    h.error("the server does not start: " .. tostring(reason), { "run `" .. table.concat(cmd, " ")
      .. "` in a terminal to see its error" })
  end
  local running = 0
  for _ in pairs(require("cairn.lsp").clients) do
    running = running + 1
  end
  h.info(string.format("%d cairn server(s) running in this Neovim; workspace here: %s", running,
    vim.fn.fnamemodify(root, ":~")))
end

return M
