"""tune_ko2en_react: Korean queries over the English React pages (set A), written by hand.

Each query was written from reading ONE target passage (relevance 2) before any retrieval system saw the set;
relevance-1 passages were found by regex-grepping the corpus for the query's key English terms and reading the hits.
Entries: (text, kind, relevance-2 passage, relevance-1 passages) with passage numbers NNNN of react-en-NNNN.
kind: term = keyword query (transliterations, identifiers), question = how-to / natural question,
paraphrase = the situation described in other words, avoiding the passage's own terms.
"""

Q = [
    # Synchronizing with Effects
    ("이펙트와 이벤트 핸들러 차이", "term", "0002", "0001 0065"),
    ("useEffect 안에서 setCount 하면 무한 루프 도는 이유", "question", "0008", ""),
    ("의존성 배열 생략 vs 빈 배열 [] 실행 시점 차이", "term", "0011", "0009 0014"),
    ("ref는 왜 useEffect 의존성 배열에 안 넣어도 되나요?", "question", "0012", "0013"),
    ("이펙트 클린업 함수 채팅 서버 연결 해제", "term", "0015", "0014 0016 0037 0322"),
    ("개발 모드에서 이펙트가 두 번 실행되는데 한 번만 돌게 하려면?", "question", "0018", "0015 0016 0017 0019 0321"),
    ("dialog showModal 두 번 호출 오류 클린업", "term", "0020", "0021"),
    ("컴포넌트에서 직접 서버 데이터를 불러올 때의 단점", "paraphrase", "0026", "0027 0083"),
    ("setInterval 카운터가 1초에 두 번 올라가는 버그", "term", "0042", "0041 0043"),
    # You Might Not Need an Effect
    ("firstName lastName 합친 fullName을 state로 따로 관리해야 하나요?", "question", "0050", "0051"),
    ("userId 바뀔 때 하위 state 전부 초기화 key", "term", "0058", "0057 0059 0150 0089"),
    ("렌더링 도중 이전 prop 값과 비교해서 state 조정하는 패턴", "paraphrase", "0061", "0060 0062"),
    ("이펙트 체인 연쇄 state 업데이트 안티패턴", "term", "0069", "0068 0070 0071"),
    ("앱 로드 시 딱 한 번만 실행할 초기화 코드 어디에 두나요?", "question", "0072", "0073 0030"),
    ("navigator.onLine 외부 스토어 구독 useSyncExternalStore", "term", "0080", "0079 0078 0116"),
    ("빠르게 타이핑하면 예전 검색 결과가 나중에 도착해 덮어쓰는 현상", "paraphrase", "0082", "0024 0044 0045 0083"),
    # Reusing Logic with Custom Hooks
    ("커스텀 훅 네이밍 규칙 use 접두사", "term", "0097", "0098"),
    ("훅을 하나도 안 쓰는 함수에도 use를 붙여야 하나요?", "question", "0098", "0099 0100"),
    ("같은 커스텀 훅을 두 컴포넌트에서 부르면 값이 공유되는지", "paraphrase", "0102", "0101"),
    ("커스텀 훅에 넘긴 onReceiveMessage 때문에 재연결될 때 useEffectEvent", "term", "0108", "0107 0123"),
    ("useMount useEffectOnce 라이프사이클 커스텀 훅 안티패턴", "term", "0112", "0113"),
    # Manipulating the DOM with Refs
    ("리스트 아이템마다 ref 붙이기 ref 콜백 Map", "term", "0130", "0129"),
    ("부모 컴포넌트에서 자식 컴포넌트 안의 input에 포커스 주려면?", "question", "0132", "0133 0140"),
    ("flushSync 상태 업데이트 후 바로 스크롤", "term", "0135", "0139 0140 0235"),
    ("리액트가 그린 DOM 요소를 직접 지웠더니 앱이 깨지는 이유", "paraphrase", "0137", "0136"),
    # Preserving and Resetting State
    ("if 문 안과 밖에 똑같은 <Counter />를 두면 왜 state가 유지되나요?", "question", "0144", "0145"),
    ("컴포넌트 함수 안에서 다른 컴포넌트를 정의하면 입력값이 계속 날아가는 이유", "paraphrase", "0147", "0146"),
    ("채팅 상대 바꿀 때 입력창 초기화 key={to.id}", "term", "0152", "0150 0151"),
    ("화면에서 사라진 컴포넌트의 입력 상태를 살려두는 방법", "question", "0153", ""),
    # Queueing a Series of State Updates
    ("state 업데이트 배칭 이벤트 핸들러 끝난 후 리렌더", "term", "0160", "0159 0075 0235"),
    ("setNumber(n => n + 1) 업데이터 함수로 여러 번 증가", "term", "0161", "0162 0167"),
    ("setState에 값과 업데이터 함수를 섞어서 호출하면 최종값은?", "question", "0164", "0163 0168"),
    # Rendering Lists
    ("map으로 리스트 렌더링할 때 key prop 경고 뜨는 거 해결", "term", "0175", "0171"),
    ("배열 인덱스를 key로 쓰면 안 되나요?", "question", "0179", "0180 0157 0184"),
    ("map 화살표 함수에 중괄호 쓰면 아무것도 안 나오는 이유", "question", "0173", "0174"),
    ("항목 하나당 h1 p 여러 개 렌더링 Fragment key", "term", "0176", "0175 0184"),
    # Keeping Components Pure
    ("순수 함수 컴포넌트 같은 입력 같은 JSX", "term", "0186", "0187 0185 0317"),
    ("렌더링 중에 방금 만든 배열에 push 해도 되나요?", "question", "0191", "0225 0319"),
    ("prop으로 받은 배열을 렌더 중에 수정해서 항목이 중복으로 보이는 버그", "paraphrase", "0196",
     "0195 0318 0319 0320"),
    ("리액트가 컴포넌트 순수성을 중요하게 여기는 이유", "paraphrase", "0193", ""),
    # useMemo
    ("모든 계산에 useMemo를 붙여야 하나요?", "question", "0206", "0205 0207 0208 0256 0257"),
    ("memo로 감싼 자식에 매번 새 배열 prop 넘겨서 최적화가 안 먹힘", "paraphrase", "0212", "0213 0211 0254 0260 0267"),
    ("JSX 노드 자체를 useMemo로 캐싱", "term", "0214", "0213 0215"),
    ("options 객체 의존성 때문에 채팅 매 렌더 재연결", "term", "0217", "0218 0219"),
    ("useMemo로 함수 메모이제이션 vs useCallback 차이", "term", "0223", "0222"),
    ("useMemo에서 객체 반환했는데 undefined 나와요", "question", "0226", ""),
    ("반복문 map 안에서 useMemo 호출 불가 항목별 메모이제이션", "term", "0229", "0230 0200"),
    # useReducer
    ("useReducer 초기 state 매 렌더 재생성 방지 init 함수", "term", "0241", "0242 0231"),
    ("dispatch 직후 console.log 하면 이전 state가 찍혀요", "question", "0243", "0234"),
    ("dispatch 했는데 화면이 갱신 안 되는 이유", "question", "0244", "0239 0240"),
    ("Too many re-renders 에러 onClick={handleClick()}", "term", "0247", ""),
    ("리듀서에 todo 추가하면 개발 환경에서 두 번 들어감", "paraphrase", "0248", "0249 0233"),
    # memo
    ("부모가 다시 그려져도 props 그대로면 자식 렌더링 건너뛰기", "paraphrase", "0253", "0251 0252 0211"),
    ("memo arePropsEqual 커스텀 비교 함수", "term", "0262", "0263 0252"),
    ("React Compiler 쓰면 React.memo 안 써도 되나요?", "question", "0264", "0265 0266 0250"),
    ("memo 컴포넌트가 컨텍스트 바뀌면 리렌더됨 일부만 구독", "term", "0259", "0258"),
    # Suspense
    ("useEffect 안에서 데이터 불러오면 Suspense fallback이 안 보여요", "question", "0269", "0273 0271"),
    ("중첩 Suspense 단계별 로딩 순서", "term", "0275", "0276"),
    ("새 검색 결과 불러오는 동안 이전 결과 그대로 보여주기 useDeferredValue", "term", "0277", "0278"),
    ("이미 보이던 화면이 로딩 스피너로 갈아치워지는 걸 막으려면?", "question", "0279", "0280 0291 0303"),
    ("서버 렌더링 중 에러 난 컴포넌트 Suspense fallback 클라이언트 전용", "term", "0283", "0284 0285"),
    # useTransition
    ("트랜지션으로 input 값 업데이트하면 입력이 안 돼요", "question", "0306", "0296"),
    ("startTransition async await 이후 상태 업데이트가 트랜지션 처리 안 됨", "term", "0308", "0294 0295 0297"),
    ("startTransition에 넘긴 함수는 나중에 실행되나요?", "question", "0310", "0294 0295"),
    ("탭 버튼 누르면 탭 영역 전체가 로딩 화면으로 바뀌는 걸 막는 방법", "paraphrase", "0303", "0279 0291"),
    # StrictMode
    ("앱 일부에만 Strict Mode 켜면 이펙트 이중 실행은?", "question", "0316", "0313"),
    ("채팅방 바꿀수록 열린 연결 수가 계속 늘어나는 문제", "paraphrase", "0322", "0321 0323"),
    ("ref 콜백 클린업 누락 Strict Mode 메모리 누수", "term", "0325", "0324 0326"),
]
