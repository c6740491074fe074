import { readdirSync, readFileSync } from 'node:fs'
import { Gauge, ReadCounter, type Registry } from './registry'

const startTimeSeconds = Math.round((Date.now() - performance.now()) / 1000)

/** A field of /proc/self/status in bytes (Linux only; null elsewhere). */
function procStatusBytes(field: 'VmRSS' | 'VmSize'): number | null {
  try {
    const status = readFileSync('/proc/self/status', 'utf8')
    const kib = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]
    return kib === undefined ? null : Number(kib) * 1024
  } catch {
    return null
  }
}

function openFds(): number | null {
  try {
    return readdirSync('/proc/self/fd').length
  } catch {
    return null
  }
}

function maxFds(): number | null {
  try {
    const limits = readFileSync('/proc/self/limits', 'utf8')
    const soft = /^Max open files\s+(\d+)/m.exec(limits)?.[1]
    return soft === undefined ? null : Number(soft)
  } catch {
    return null
  }
}

/**
 * The process metrics Prometheus client libraries export under the same names: CPU seconds,
 * resident and virtual memory, open and allowed file descriptors, start time; plus the
 * JavaScript heap.
 */
export function registerProcessMetrics(registry: Registry): void {
  const cpu = () => process.cpuUsage()
  registry.add(
    new ReadCounter(
      'process_cpu_user_seconds_total',
      'User CPU time spent in seconds.',
      () => cpu().user / 1e6,
    ),
  )
  registry.add(
    new ReadCounter(
      'process_cpu_system_seconds_total',
      'System CPU time spent in seconds.',
      () => cpu().system / 1e6,
    ),
  )
  registry.add(
    new ReadCounter(
      'process_cpu_seconds_total',
      'Total user and system CPU time spent in seconds.',
      () => {
        const { user, system } = cpu()
        return (user + system) / 1e6
      },
    ),
  )
  registry.add(
    new Gauge(
      'process_resident_memory_bytes',
      'Resident memory size in bytes.',
      () => procStatusBytes('VmRSS') ?? process.memoryUsage().rss,
    ),
  )
  registry.add(
    new Gauge('process_virtual_memory_bytes', 'Virtual memory size in bytes.', () =>
      procStatusBytes('VmSize'),
    ),
  )
  registry.add(
    new Gauge(
      'process_heap_bytes',
      'JavaScript heap in use, in bytes.',
      () => process.memoryUsage().heapUsed,
    ),
  )
  registry.add(new Gauge('process_open_fds', 'Number of open file descriptors.', openFds))
  registry.add(new Gauge('process_max_fds', 'Maximum number of open file descriptors.', maxFds))
  registry.add(
    new Gauge(
      'process_start_time_seconds',
      'Start time of the process since unix epoch in seconds.',
      () => startTimeSeconds,
    ),
  )
}
