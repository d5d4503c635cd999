// The help text: the commands, their flags, and the environment they read.
export const USAGE = `Usage: berth-agent <command> [options]

Commands:
  enroll --url URL --token TOKEN [--state-dir DIR] [--insecure] [--force]
                  enrol this server with the control plane (once)
  run [--state-dir DIR] [--insecure]
                  connect to the control plane and run its commands (the daemon)
  status [--state-dir DIR] [--json]
                  show the link, the journal and this server's id
  uninstall [--purge] [--remove-containers] [--print-script]
                  remove the installed agent (service, executable); --purge also its
                  identity and journal, --remove-containers the deployments and their data;
                  --print-script prints the uninstaller instead of running it

Options:
  --version       print the agent's version
  --help          print this help

Environment (flags win):
  BERTH_URL            control plane URL for enroll (https://; http:// only to this machine)
  BERTH_TOKEN          enrolment token, instead of --token (keeps it out of the process list)
  BERTH_STATE_DIR      state directory (default /var/lib/berth-agent)
  BERTH_INSECURE       true: allow http:// to another machine (tests only)
  BERTH_DOCKER_SOCKET  Docker engine socket (default /var/run/docker.sock)
  BERTH_LOG_LEVEL      trace, debug, info, warn, error, fatal or silent (default info)

Exit codes: 0 done, 1 failed, 2 refused to start (bad invocation or setup; nothing was done).
`;
