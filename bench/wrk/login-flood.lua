-- Wrong-password logins from many addresses and (claimed) IPs, so neither limiter short-circuits
-- them: every request runs one argon2id verification. The server runs with --trust-proxy.
math.randomseed(os.time())
request = function()
  local n = math.random(1, 1000000000)
  local ip = string.format("10.%d.%d.%d", math.random(0, 255), math.random(0, 255), math.random(1, 254))
  local body = string.format("email=flood%d%%40example.com&password=wrong-password-%d", n, n)
  return wrk.format("POST", "/login", {
    ["Content-Type"] = "application/x-www-form-urlencoded",
    ["X-Forwarded-For"] = ip,
  }, body)
end
